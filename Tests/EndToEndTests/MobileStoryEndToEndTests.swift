import Foundation
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyCLI

/// The mobile story across real processes: the story of `latchkey demo run`, a second tenant refused
/// everywhere, and an audit consumer that crashes mid-flow without losing or duplicating anything.
@Suite(.serialized) struct MobileStoryEndToEndTests {
    @Test func theMobileStoryAcrossTheWholePlatform() async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let platform = try await PlatformProcesses(database: scratch)
            let http = DemoHTTP()
            do {
                // The real-broker job names the librdkafka it put on LD_LIBRARY_PATH: every service must run it.
                if let expected = ProcessInfo.processInfo.environment["LATCHKEY_TEST_LIBRDKAFKA_VERSION"] {
                    let versions = try await platform.kafkaLibraryVersions()
                    #expect(versions.count == 4 && versions.values.allSatisfy { $0 == expected }, "\(versions)")
                    print("librdkafka of the services: \(versions.sorted { $0.key < $1.key })")
                }
                try await play(platform, http: http, scratch: scratch)
            } catch {
                Issue.record(
                    "\(error)\n--- gateway\n\(platform.output("registration-gateway").suffix(2_000))\n--- token\n\(platform.output("token-service").suffix(2_000))\n--- sidecar\n\(platform.output("dpop-verifier").suffix(2_000))\n--- audit\n\(platform.output("audit-consumer").suffix(2_000))"
                )
            }
            try await http.shutdown()
            let statuses = await platform.stop()
            for (name, status) in statuses {
                #expect(
                    status == 0,
                    "\(name) did not stop cleanly (\(String(describing: status))): \(platform.output(name).suffix(3_000))"
                )
            }
        }
    }

    private func play(_ platform: PlatformProcesses, http: DemoHTTP, scratch: DatabaseConfiguration) async throws {
        let endpoints = platform.endpoints
        let credentials = try await DemoSeeder(
            http: http, endpoints: endpoints, bootstrapKey: PlatformProcesses.bootstrapKey
        ).seed()

        // The audit consumer crashes before the story and comes back while it runs: nothing is lost.
        await platform.crash("audit-consumer")
        let story = Task { try await MobileStory(http: http, endpoints: endpoints, credentials: credentials).run() }
        try await Task.sleep(for: .seconds(3))
        try await platform.start("audit-consumer")
        let outcome = try await story.value
        #expect(outcome.secondsUntilRefused < 5)

        // Every event of the demo tenant is in the audit log exactly once, and the chain verifies.
        let adminToken = try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
        let produced = try await count("SELECT count(*)::int FROM outbox WHERE tenant_id = 'demo'", in: scratch)
        var stored = 0
        _ = try await eventually(within: .seconds(30)) {
            stored = try await count("SELECT count(*)::int FROM audit_events WHERE tenant_id = 'demo'", in: scratch)
            let sent = try await count(
                "SELECT count(*)::int FROM outbox WHERE tenant_id = 'demo' AND sent_at IS NOT NULL", in: scratch)
            return stored == produced && sent == produced
        }
        #expect(stored == produced, "audit rows \(stored) vs events \(produced)")
        let distinct = try await count(
            "SELECT count(DISTINCT event_id)::int FROM audit_events WHERE tenant_id = 'demo'", in: scratch)
        #expect(distinct == stored)
        let verified = try await http.get(
            "\(endpoints.audit)/audit/t/demo/verify", headers: [("Authorization", "Bearer \(adminToken)")])
        #expect(verified.json["status"] as? String == "ok", "\(verified.body)")

        // After the whole story every service has exported its metrics: all follow Prometheus' naming conventions.
        for (name, text) in try await platform.metricsTexts() {
            #expect(text.contains("_requests_total{"), "\(name) exports its request counter")
            #expect(PrometheusText.conventionViolations(text) == [], "\(name)")
        }

        // A second tenant's tokens are refused everywhere in the demo tenant.
        try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants", #"{"tenant_id":"other"}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]),
            201, "platform admin creates a second tenant")
        let otherAdmin = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/other/clients",
                #"{"client_name":"Other admin","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"admin"}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]), 201, "admin client of the second tenant")
        let otherEndpoints = DemoEndpoints(
            gateway: endpoints.gateway, tokenService: endpoints.tokenService, sidecar: endpoints.sidecar,
            audit: endpoints.audit, tenant: "other")
        let otherToken = try await DemoSeeder.adminToken(
            http, otherEndpoints, clientID: otherAdmin.json["client_id"] as? String ?? "",
            secret: otherAdmin.json["client_secret"] as? String ?? "")
        let bearer = [("Authorization", "Bearer \(otherToken)")]
        #expect(try await http.get("\(endpoints.gateway)/admin/tenants/demo", headers: bearer).status == 401)
        #expect(try await http.get("\(endpoints.audit)/audit/t/demo/verify", headers: bearer).status == 401)
        #expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/demo/register", #"{"redirect_uris":["com.x:/cb"]}"#, headers: bearer
            ).status == 401)
        #expect(try await http.get("\(endpoints.sidecar)/v1/orders", headers: bearer).status == 401)
        #expect(
            try await http.postForm(
                "\(endpoints.tokenService)/t/demo/introspect", [("token", otherToken)],
                headers: [
                    (
                        "Authorization",
                        "Basic "
                            + Data("\(credentials.adminClientID):\(credentials.adminClientSecret)".utf8)
                            .base64EncodedString()
                    )
                ]
            ).json["active"] as? Bool == false)
    }

    private func count(_ sql: String, in database: DatabaseConfiguration) async throws -> Int {
        try await withPostgresClient(database) { client in
            let rows = try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestEnvironment.logger)
            for try await value in rows.decode(Int.self) { return value }
            return 0
        }
    }
}
