import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Testing

@testable import LatchkeyCLI

/// OpenTelemetry tracing across real processes exporting to an OTLP/HTTP collector stand-in: a registration
/// request's `traceparent` reaches its outbox row, its CloudEvent and the record's header on Kafka, and the
/// gateway, the audit consumer and the sidecar's revocation listener export spans of that trace.
@Suite(.serialized) struct TracingEndToEndTests {
    @Test func aRegistrationsTraceReachesItsEventTheAuditConsumerAndTheSidecar() async throws {
        let collector = OTLPCollector()
        try await withLoopbackServer(collector.router) { port in
            try await TestDatabase.withScratchDatabase { scratch in
                try await TestDatabase.migrate(scratch)
                let platform = try await PlatformProcesses(
                    database: scratch,
                    settings: [
                        "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(port)",
                        "OTEL_BSP_SCHEDULE_DELAY": "200",
                    ])
                let http = DemoHTTP()
                do {
                    try await play(platform, http: http, scratch: scratch, collector: collector)
                } catch {
                    Issue.record(
                        "\(error)\n--- gateway\n\(platform.output("registration-gateway").suffix(2_000))\n--- sidecar\n\(platform.output("dpop-verifier").suffix(2_000))\n--- audit\n\(platform.output("audit-consumer").suffix(2_000))"
                    )
                }
                try await http.shutdown()
                for (name, status) in await platform.stop() {
                    #expect(status == 0, "\(name): \(platform.output(name).suffix(2_000))")
                }
            }
        }
    }

    private func play(
        _ platform: PlatformProcesses, http: DemoHTTP, scratch: DatabaseConfiguration, collector: OTLPCollector
    ) async throws {
        let endpoints = platform.endpoints
        let credentials = try await DemoSeeder(
            http: http, endpoints: endpoints, bootstrapKey: PlatformProcesses.bootstrapKey
        ).seed()
        let adminToken = try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
        let minted = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/demo/initial-access-tokens", #"{"uses":1}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]), 201, "mint an initial access token")
        let initialAccessToken = try required(minted.json["initial_access_token"] as? String, "initial access token")

        let registration = OTLPCollector.newTraceparent()
        let registered = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/demo/register",
                #"{"redirect_uris":["com.example.traced:/cb"],"client_name":"Traced","token_endpoint_auth_method":"none"}"#,
                headers: [("Authorization", "Bearer \(initialAccessToken)"), ("traceparent", registration.header)]),
            201, "register a client with a traceparent")
        let clientID = try required(registered.json["client_id"] as? String, "client_id")
        let registrationToken = try required(
            registered.json["registration_access_token"] as? String, "registration access token")
        let registeredType = LatchkeyEventType.clientRegistered

        // The audit consumer stored the CloudEvent it read from Kafka: its distributed-tracing attribute
        // names the request's trace, and so does the outbox row.
        let audited = try await eventually(within: .seconds(30)) {
            try await Self.auditedTraceparent(clientID: clientID, type: registeredType.rawValue, in: scratch) != nil
        }
        #expect(audited, "the ClientRegistered event was not audited")
        let eventTrace = try await Self.auditedTraceparent(
            clientID: clientID, type: registeredType.rawValue, in: scratch)
        #expect(eventTrace.flatMap(Traceparent.traceID(of:)) == registration.traceID, "\(eventTrace ?? "none")")
        let outboxTrace = try await Self.text(
            "SELECT traceparent FROM outbox WHERE message_key = \("demo/\(clientID)") AND event_type = \(registeredType.rawValue)",
            in: scratch)
        #expect(outboxTrace == eventTrace)
        // The request's span is a child of the caller's: the event names that span, not the caller's.
        #expect(eventTrace?.contains(registration.spanID) == false)

        // The record on Kafka carries the relay's producer span in its traceparent header, same trace.
        let record = try await Self.record(
            key: "demo/\(clientID)", topic: registeredType.topic(), brokers: platform.environment["KAFKA_BROKERS"] ?? ""
        )
        let header = KafkaTraceContext.traceparentHeader(of: record)
        #expect(header.flatMap(Traceparent.traceID(of:)) == registration.traceID, "\(header ?? "none")")
        #expect(header != eventTrace, "the header names the producer span, a child of the request's")
        #expect(String(decoding: record.value, as: UTF8.self).contains(registration.traceID))

        // The gateway exports the request and transaction spans; the produce span comes from whichever outbox
        // relay published the row (the gateway's or the token service's: they share the outbox); the audit
        // consumer exports its consume span.
        let publish = "\(registeredType.topic()) publish"
        let gateway = try await eventually(within: .seconds(30)) {
            collector.exported(
                traceID: registration.traceID, by: "registration-gateway",
                spans: ["/t/{tenant}/register", "db.transaction"])
                && ["registration-gateway", "token-service"].contains {
                    collector.exported(traceID: registration.traceID, by: $0, spans: [publish])
                }
        }
        #expect(gateway, "no request, transaction or produce span of the registration's trace")
        let audit = try await eventually(within: .seconds(30)) {
            collector.exported(
                traceID: registration.traceID, by: "audit-consumer", spans: ["\(registeredType.topic()) process"])
        }
        #expect(audit, "the audit consumer exported no consume span of the registration's trace")

        // Deregistering revokes the client: the sidecar's revocation listener continues that request's trace.
        let deregistration = OTLPCollector.newTraceparent()
        try expect(
            try await http.send(
                "DELETE", "\(endpoints.gateway)/t/demo/register/\(clientID)",
                headers: [("Authorization", "Bearer \(registrationToken)"), ("traceparent", deregistration.header)]),
            204, "deregister the client")
        let revokedTopic = LatchkeyEventType.clientRevoked.topic()
        let sidecar = try await eventually(within: .seconds(30)) {
            collector.exported(traceID: deregistration.traceID, by: "dpop-verifier", spans: ["\(revokedTopic) process"])
        }
        #expect(sidecar, "the sidecar exported no consume span of the deregistration's trace")

        // A malformed traceparent is ignored: the request succeeds and starts a trace of its own.
        let malformed = "00-\(registration.traceID.uppercased())-\(registration.spanID)-01"
        let other = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/demo/initial-access-tokens", #"{"uses":1}"#,
                headers: [("Authorization", "Bearer \(adminToken)"), ("traceparent", malformed)]),
            201, "a request with a malformed traceparent")
        #expect(other.json["initial_access_token"] is String)
    }

    /// The first record with `key` on `topic`, read from the beginning.
    static func record(key: String, topic: String, brokers: String) async throws -> KafkaConsumerMessage {
        var logger = Logger(label: "test.tracing.reader")
        logger.logLevel = .error
        let consumer = try KafkaConsumer(
            configuration: KafkaConfiguration(bootstrapServers: brokers, clientID: "tracing-test-reader"),
            groupID: "tracing-test-\(UUID().uuidString.lowercased())",
            subscription: .allPartitions(of: [topic], startingAt: .beginning), logger: logger)
        let wanted = Array(key.utf8)
        let found = try await withThrowingTaskGroup(of: KafkaConsumerMessage?.self) { group in
            group.addTask {
                for try await message in consumer.messages where message.key == wanted { return message }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await consumer.close()
        return try required(found, "the record of \(key) on \(topic)")
    }

    static func auditedTraceparent(clientID: String, type: String, in scratch: DatabaseConfiguration) async throws
        -> String?
    {
        try await text(
            "SELECT coalesce(event->>'traceparent', 'none') FROM audit_events WHERE tenant_id = 'demo' AND subject = \(clientID) AND event_type = \(type)",
            in: scratch)
    }

    static func text(_ query: PostgresQuery, in scratch: DatabaseConfiguration) async throws -> String? {
        try await withPostgresClient(scratch) { client in
            let rows = try await client.query(query, logger: TestEnvironment.logger)
            for try await value in rows.decode(String?.self) { return value }
            return nil
        }
    }
}
