import Hummingbird
import HummingbirdTesting
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import AuditConsumer

@Suite struct AuditConsumerHealthTests {
    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await AuditTest.withCluster { cluster in
            let service = try await AuditTest.makeService(cluster: cluster)
            let management = ManagementClient(service.runtime.settings)
            try await service.makeApplication().journaledTest(.live) { client in
                try await management.execute(uri: "/healthz") { response in
                    #expect(response.status == .ok)
                }
                try await eventually("the lag to be measured", within: .seconds(60)) {
                    service.lagMonitor.lastMeasurement != nil
                }
                // The group's first join can make early measurements see the topics' whole backlog.
                // Polled: on a loaded machine one lag measurement can time out and readiness flips back briefly.
                try await eventually("readiness with every check ok", within: .seconds(60)) {
                    let response = try await management.execute(uri: "/readyz")
                    return response.status == .ok
                        && String(buffer: response.body)
                            == #"{"kafka":"ok","lag":"ok","postgres":"ok","schema":"ok","status":"ready"}"#
                }
                try await management.execute(uri: "/metrics") { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body).contains("latchkey_audit_consumer_total_lag_messages"))
                }
                try await client.execute(uri: "/no-such-route", method: .get) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[.contentType] == "application/json")
                }
            }
        }
    }

    @Test func servesItsOpenAPIDocumentMatchingItsRoutes() async throws {
        let settings = try await TestServiceSettings.make(
            .auditConsumer, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        let app = try AuditService(settings: settings, audit: AuditTest.settings(), logger: AuditTest.logger)
            .makeApplication()
        try await ServiceHealthExpectations.expectOpenAPIDocument(app, settings, .auditConsumer)
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(
            .auditConsumer, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        let app = try AuditService(settings: settings, audit: AuditTest.settings(), logger: AuditTest.logger)
            .makeApplication()
        try await app.journaledTest(.live) { _ in
            try await ManagementClient(settings).execute(uri: "/readyz") { response in
                #expect(response.status == .serviceUnavailable)
                let body = String(buffer: response.body)
                #expect(body.contains(#""kafka":"failing""#))
                #expect(body.contains(#""lag":"failing""#))
            }
        }
    }

    @Test func readinessFailsWhileTheLagExceedsTheThresholdAndRecoversOnceCaughtUp() async throws {
        let tenant = TestEnvironment.uniqueTenant("lag")
        let factory = AuditEventFactory(tenant: tenant)
        let events = try (0..<60).map { try factory.mixed($0, clients: 6) }
        try await AuditTest.withCluster { cluster in
            _ = try await AuditTest.withProducer(cluster) { try await AuditTest.send(events, with: $0) }
            let service = try await AuditTest.makeService(
                cluster: cluster, audit: AuditTest.settings(readyMaximumLag: 10))
            let management = ManagementClient(service.runtime.settings)
            try await service.makeApplication().journaledTest(.live) { _ in
                // The group needs seconds to form, so the first measurements see the whole backlog.
                try await eventually("the lag to be measured", within: .seconds(60)) {
                    service.lagMonitor.lastMeasurement != nil
                }
                #expect(service.lagMonitor.lastMeasurement?.total == Int64(events.count))
                try await management.execute(uri: "/readyz") { response in
                    #expect(response.status == .serviceUnavailable)
                    #expect(String(buffer: response.body).contains(#""lag":"failing""#))
                }
                try await AuditTest.waitForStored(events.count, tenants: [tenant])
                try await eventually("readiness once caught up", within: .seconds(60)) {
                    try await management.execute(uri: "/readyz").status == .ok
                }
            }
        }
    }
}
