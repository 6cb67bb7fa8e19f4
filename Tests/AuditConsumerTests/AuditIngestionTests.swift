import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import AuditConsumer

/// Ingestion end to end: embedded Kafka → audit-consumer → PostgreSQL, checked through SQL and the API.
@Suite struct AuditIngestionTests {
    @Test func tenThousandMixedEventsAreStoredExactlyOnceInPartitionOrderWithIntactChains() async throws {
        let tenants = (0..<5).map { _ in TestEnvironment.uniqueTenant("ing") }
        let platform = TestEnvironment.uniqueTenant("plat")
        let perTenant = 2_000
        let events = try tenants.flatMap { try AuditEventFactory(tenant: $0).bulk(perTenant) }
        try await TestDatabase.withApp { database in
            for tenant in tenants + [platform] { try await TestDatabase.createTenant(tenant, in: database) }
        }
        let admin = try await TestDatabase.withApp { database in
            try await AdminTokenMinter.make(tenant: platform, issuerBase: AuditTest.issuerBase, in: database)
        }
        try await AuditTest.withCluster { cluster in
            // Produced before the consumer starts, so the first batches are full ones.
            let reports = try await AuditTest.withProducer(cluster) {
                try await AuditTest.sendConcurrently(events, with: $0)
            }
            #expect(reports.count == events.count)
            let service = try await AuditTest.makeService(
                cluster: cluster, audit: AuditTest.settings(platform: platform, batchSize: 1_000))
            try await service.makeApplication().journaledTest(.router) { client in
                try await AuditTest.waitForStored(events.count, tenants: tenants)
                try await AuditTest.waitUntilCommitted(service, reports)

                try await Self.expectExactlyOnce(events, tenants: tenants)
                try await Self.expectPartitionOrder(tenants: tenants)
                let authorization = try admin.authorization()
                for tenant in tenants {
                    let response = try await client.execute(
                        uri: "/audit/t/\(tenant)/verify", method: .get, headers: [.authorization: authorization])
                    #expect(response.status == .ok)
                    let body = try AuditTest.json(response)
                    #expect(body["status"] == "ok", "\(tenant): \(body)")
                    #expect(body["count"] == .number(Double(perTenant)))
                    #expect(body["head_sequence"] == .number(Double(perTenant)))
                }
                let metrics = try await ManagementClient(service.runtime.settings).execute(uri: "/metrics")
                let text = String(buffer: metrics.body)
                let issued = AuditTest.metric(
                    text, #"latchkey_audit_events_ingested_total{type="io.latchkey.token.issued.v1"}"#)
                #expect((issued ?? 0) >= Double(4 * perTenant / 10 * tenants.count))
                for tenant in tenants {
                    #expect(
                        AuditTest.metric(text, #"latchkey_audit_chain_length{tenant="\#(tenant)"}"#)
                            == Double(perTenant))
                }
                #expect(text.contains("latchkey_audit_end_to_end_delay_seconds_bucket"))
                // Lag series exist per partition (their values are shared with other tests' services).
                #expect(
                    AuditTest.metric(
                        text, #"latchkey_audit_consumer_lag_messages{topic="latchkey.token-issued",partition="0"}"#)
                        != nil)
            }
        }
    }

    /// Every produced id once, and nothing else, for these tenants.
    static func expectExactlyOnce(_ events: [EncodedEvent], tenants: [String]) async throws {
        let stored = try await TestDatabase.withSystem { database in
            let rows = try await database.client.query(
                "SELECT event_id::text FROM audit_events WHERE tenant_id = ANY(\(tenants)::text[])",
                logger: database.logger)
            var ids: [String] = []
            for try await id in rows.decode(String.self) { ids.append(id) }
            return ids
        }
        #expect(stored.count == events.count)
        #expect(Set(stored) == Set(events.map { $0.id.lowercased() }))
    }

    /// Within each tenant, records of one partition got increasing sequence numbers in offset order,
    /// and sequences run 1…n without a gap.
    static func expectPartitionOrder(tenants: [String]) async throws {
        try await TestDatabase.withSystem { database in
            let rows = try await database.client.query(
                """
                SELECT count(*) FILTER (WHERE previous_offset >= source_offset)::int8,
                       count(*) FILTER (WHERE previous_sequence IS NOT NULL AND sequence <> previous_sequence + 1)::int8
                FROM (
                    SELECT source_offset, sequence,
                           lag(source_offset) OVER (PARTITION BY tenant_id, source_topic, source_partition ORDER BY sequence)
                               AS previous_offset,
                           lag(sequence) OVER (PARTITION BY tenant_id ORDER BY sequence) AS previous_sequence
                    FROM audit_events WHERE tenant_id = ANY(\(tenants)::text[])
                ) ordered
                """, logger: database.logger)
            for try await (outOfOrder, gaps) in rows.decode((Int64, Int64).self) {
                #expect(outOfOrder == 0, "records stored out of partition order")
                #expect(gaps == 0, "sequence gaps")
            }
        }
    }

    @Test func theSameEventsProducedTwiceAreStoredOnce() async throws {
        let tenant = TestEnvironment.uniqueTenant("dup")
        let factory = AuditEventFactory(tenant: tenant)
        let events = try (0..<300).map { try factory.mixed($0, clients: 10) }
        try await AuditTest.withCluster { cluster in
            let service = try await AuditTest.makeService(cluster: cluster)
            try await service.makeApplication().journaledTest(.router) { client in
                let again = try await AuditTest.withProducer(cluster) { producer in
                    try await AuditTest.send(events, with: producer)
                    try await AuditTest.waitForStored(events.count, tenants: [tenant])
                    // Same bytes, same ids, new offsets: what an outbox relay re-publishing after a crash sends.
                    return try await AuditTest.send(events, with: producer)
                }
                try await AuditTest.waitUntilCommitted(service, again)
                #expect(try await AuditTest.storedCount(tenants: [tenant]) == events.count)
                try await Self.expectExactlyOnce(events, tenants: [tenant])
                let metrics = try await ManagementClient(service.runtime.settings).execute(uri: "/metrics").text
                // Process-wide registry: other tests add to it, so at least this test's share.
                #expect((AuditTest.metric(metrics, "latchkey_audit_duplicates_total") ?? 0) >= Double(events.count))
            }
        }
    }
}
