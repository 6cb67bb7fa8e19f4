import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import AuditConsumer

/// Edits made to stored rows behind the service's back are found by `/verify`.
///
/// Tampering needs powers no service role has: `latchkey_app` and `latchkey_system` hold no
/// UPDATE or DELETE on `audit_events`, and the owner is bound by the FORCEd Row-Level Security
/// (no policy for it) and by the append-only trigger. The tests therefore play an attacker with
/// the owner's credentials: inside one transaction they disable the trigger, add a policy for
/// themselves, edit, and remove both again, so no other session ever sees weakened rules. That
/// DDL locks the whole table, so these tests run in a scratch database of their own.
@Suite struct AuditTamperTests {
    /// A migrated scratch database reachable as the owner, `latchkey_app` and `latchkey_system`.
    struct Scratch: Sendable {
        var owner: DatabaseConfiguration
        var app: DatabaseConfiguration
        var system: DatabaseConfiguration

        static func run(_ body: (Scratch) async throws -> Void) async throws {
            try await TestDatabase.withScratchDatabase { owner in
                try await TestDatabase.migrate(owner)
                var app = try TestEnvironment.appDatabase()
                app.database = owner.database
                var system = try TestEnvironment.systemDatabase()
                system.database = owner.database
                try await body(Scratch(owner: owner, app: app, system: system))
            }
        }

        func withApp<T: Sendable>(_ body: (Database) async throws -> T) async throws -> T {
            try await withPostgresClient(app) { try await body(Database(client: $0, logger: TestEnvironment.logger)) }
        }

        func withSystem<T: Sendable>(_ body: (Database) async throws -> T) async throws -> T {
            try await withPostgresClient(system) {
                try await body(Database(client: $0, logger: TestEnvironment.logger))
            }
        }

        func service(cluster: EmbeddedKafkaCluster, platform: String) throws -> AuditService {
            let settings = ServiceSettings(
                serviceName: "audit-consumer", port: 0, database: app, systemDatabase: system,
                kafkaBrokers: cluster.bootstrapServers)
            return try AuditService(
                settings: settings, audit: AuditTest.settings(platform: platform), logger: AuditTest.logger)
        }

        /// Runs `statement` as the owner inside a transaction that temporarily lifts the protections.
        func tamper(_ statement: PostgresQuery, table: String = "audit_events", disableTrigger: Bool = true)
            async throws
        {
            try await withPostgresClient(owner) { client in
                try await Database(client: client, logger: TestEnvironment.logger).withTransaction { connection in
                    let logger = TestEnvironment.logger
                    let trigger = disableTrigger && table == "audit_events"
                    if trigger {
                        try await connection.query(
                            "ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only", logger: logger)
                    }
                    try await connection.query(
                        PostgresQuery(
                            unsafeSQL:
                                "CREATE POLICY tamper_test ON \(table) TO CURRENT_USER USING (true) WITH CHECK (true)"),
                        logger: logger)
                    try await connection.query(statement, logger: logger)
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "DROP POLICY tamper_test ON \(table)"), logger: logger)
                    if trigger {
                        try await connection.query(
                            "ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only", logger: logger)
                    }
                }
            }
        }
    }

    @Test func verifyReportsTheFirstSequenceThatNoLongerMatches() async throws {
        let platform = TestEnvironment.uniqueTenant("plat")
        let cases = ["content", "column", "delete", "rehash", "head"].map { ($0, TestEnvironment.uniqueTenant("tmp")) }
        let tenants = cases.map(\.1)
        let events = try tenants.flatMap { try AuditEventFactory(tenant: $0).bulk(30, clients: 5) }
        try await Scratch.run { scratch in
            let admin = try await scratch.withApp { database in
                for tenant in tenants + [platform] { try await TestDatabase.createTenant(tenant, in: database) }
                return try await AdminTokenMinter.make(tenant: platform, issuerBase: AuditTest.issuerBase, in: database)
            }
            try await AuditTest.withCluster { cluster in
                let service = try scratch.service(cluster: cluster, platform: platform)
                try await service.makeApplication().journaledTest(.router) { client in
                    let reports = try await AuditTest.withProducer(cluster) {
                        try await AuditTest.send(events, with: $0)
                    }
                    try await AuditTest.waitUntilCommitted(service, reports)
                    let authorization = try admin.authorization()
                    func verify(_ tenant: String) async throws -> JSONValue {
                        let response = try await client.execute(
                            uri: "/audit/t/\(tenant)/verify", method: .get, headers: [.authorization: authorization])
                        #expect(response.status == .ok)
                        return try AuditTest.json(response)
                    }
                    for tenant in tenants { #expect(try await verify(tenant)["status"] == "ok") }

                    let tenant = Dictionary(uniqueKeysWithValues: cases)
                    try await scratch.tamper(
                        """
                        UPDATE audit_events SET event = jsonb_set(event, '{data,client_name}', '"nothing to see"')
                        WHERE tenant_id = \(tenant["content"]!) AND sequence = 17 AND event ? 'data'
                        """)
                    try await scratch.tamper(
                        "UPDATE audit_events SET subject = 'someone-else' WHERE tenant_id = \(tenant["column"]!) AND sequence = 9"
                    )
                    try await scratch.tamper(
                        "DELETE FROM audit_events WHERE tenant_id = \(tenant["delete"]!) AND sequence = 12")
                    // A careful attacker recomputes the edited row's own hash; the next row still points at the old one.
                    let (forgedEvent, forgedHash) = try await Self.forgeRow(
                        tenant: tenant["rehash"]!, sequence: 20, reader: service.reader)
                    try await scratch.tamper(
                        """
                        UPDATE audit_events SET event = \(forgedEvent)::jsonb, hash = \(forgedHash)
                        WHERE tenant_id = \(tenant["rehash"]!) AND sequence = 20
                        """)
                    try await scratch.tamper(
                        "UPDATE audit_chain_heads SET hash = repeat('cd', 32) WHERE tenant_id = \(tenant["head"]!)",
                        table: "audit_chain_heads")

                    let content = try await verify(tenant["content"]!)
                    #expect(content["status"] == "broken")
                    #expect(content["broken_sequence"] == 17)
                    #expect(content["count"] == 16)
                    #expect(content["reason"]?.stringValue?.contains("does not match its hash") == true)
                    #expect(try await verify(tenant["column"]!)["broken_sequence"] == 9)
                    let deleted = try await verify(tenant["delete"]!)
                    #expect(deleted["broken_sequence"] == 12)
                    #expect(deleted["reason"]?.stringValue?.contains("missing") == true)
                    let rehashed = try await verify(tenant["rehash"]!)
                    #expect(rehashed["broken_sequence"] == 21, "\(rehashed)")
                    #expect(rehashed["reason"] == "prev_hash differs from the hash of record 20")
                    let head = try await verify(tenant["head"]!)
                    #expect(head["broken_sequence"] == 30)
                    #expect(head["reason"]?.stringValue?.contains("chain head") == true)
                }
            }
        }
    }

    @Test func serviceRolesCannotEditTheLogAndTheOwnerIsStoppedByTheAppendOnlyTrigger() async throws {
        let tenant = TestEnvironment.uniqueTenant("ro")
        let record = try AuditEventFactory(tenant: tenant).registered(client: "c-1", user: AuditEventFactory.user(3))
        try await Scratch.run { scratch in
            try await scratch.withSystem { database in
                _ = try await AuditBatchStore(database: database, clock: SystemWallClock())
                    .store(try AuditBatchStoreTests.records([record]))
                for statement: PostgresQuery in [
                    "UPDATE audit_events SET subject = 'x' WHERE tenant_id = \(tenant)",
                    "DELETE FROM audit_events WHERE tenant_id = \(tenant)",
                ] {
                    let error = await #expect(throws: (any Error).self) {
                        try await database.withTransaction { try await $0.query(statement, logger: database.logger) }
                    }
                    #expect(error?.postgresSQLState == "42501", "permission denied")
                }
            }
            try await scratch.withApp { database in
                let error = await #expect(throws: (any Error).self) {
                    try await database.withTenantTransaction(tenant) {
                        try await $0.query("UPDATE audit_events SET subject = 'x'", logger: database.logger)
                    }
                }
                #expect(error?.postgresSQLState == "42501", "permission denied")
            }
            // The owner with a policy but with the trigger in place: refused with insufficient_privilege.
            let error = await #expect(throws: (any Error).self) {
                try await scratch.tamper(
                    "UPDATE audit_events SET subject = 'x' WHERE tenant_id = \(tenant)", disableTrigger: false)
            }
            #expect(error?.postgresSQLState == "42501")
            #expect(String(reflecting: error).contains("append-only"))
        }
    }

    /// Row `sequence` with a changed event and the hash that matches the change (what a forger computes).
    static func forgeRow(tenant: String, sequence: Int64, reader: AuditLogReader) async throws -> (String, String) {
        var row: StoredAuditEvent?
        try await reader.stream(tenant: tenant, filter: AuditEventFilter()) { event in
            if event.sequence == sequence { row = event }
        }
        var stored = try #require(row)
        var event = try #require(stored.event?.objectValue)
        event["forged"] = true
        stored.eventText = String(decoding: CanonicalJSON.encode(.object(event)), as: UTF8.self)
        let record = try #require(stored.chainRecord)
        let hash = try #require(AuditChain.hash(previous: stored.previousHash, record: record))
        return (stored.eventText, hash)
    }
}
