import Foundation
import LatchkeyTestSupport
import Logging
import PostgresNIO

@testable import LatchkeyKafka
@testable import LatchkeyPersistence

/// A private, migrated database for one outbox test: relays publish every tenant's rows, so tests
/// sharing one outbox would steal each other's events.
struct OutboxTestDatabase {
    let app: Database
    let system: Database

    static func with<T: Sendable>(_ body: (OutboxTestDatabase) async throws -> T) async throws -> T {
        try await TestDatabase.withScratchDatabase { owner in
            try await TestDatabase.migrate(owner)
            var appConfiguration = try TestEnvironment.appDatabase()
            appConfiguration.database = owner.database
            var systemConfiguration = try TestEnvironment.systemDatabase()
            systemConfiguration.database = owner.database
            return try await withPostgresClient(appConfiguration) { appClient in
                try await withPostgresClient(systemConfiguration) { systemClient in
                    try await body(
                        OutboxTestDatabase(
                            app: Database(client: appClient, logger: TestEnvironment.logger),
                            system: Database(client: systemClient, logger: TestEnvironment.logger)))
                }
            }
        }
    }

    /// Writes one event per transaction, as a service does, over `keys` keys named `<tenant>/<keyPrefix>-<n>`;
    /// returns (event id, key) in write order.
    func writeEvents(
        _ count: Int, tenant: String, keys: Int, writer: OutboxWriter, topicSuffix: String, keyPrefix: String = "client"
    ) async throws -> [(UUID, String)] {
        var written: [(UUID, String)] = []
        for index in 0..<count {
            let id = UUID()
            let key = "\(tenant)/\(keyPrefix)-\(index % keys)"
            try await app.withTenantTransaction(tenant) { connection in
                try await writer.append(
                    eventID: id, tenant: tenant, eventType: "io.latchkey.test.v1", topicSuffix: topicSuffix,
                    key: key, payload: #"{"id":"\#(id.uuidString.lowercased())","n":\#(index)}"#,
                    on: connection, logger: app.logger)
            }
            written.append((id, key))
        }
        return written
    }

    func unsentCount() async throws -> Int {
        try await system.withTransaction { connection in
            let rows = try await connection.query(
                "SELECT count(*)::int8 FROM outbox WHERE sent_at IS NULL", logger: system.logger)
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }

    /// Polls until the outbox is drained or `timeout` passes; returns what is still unsent.
    func waitUntilDrained(timeout: Duration) async throws -> Int {
        var unsent = 0
        _ = try await eventually(within: timeout) {
            unsent = try await unsentCount()
            return unsent == 0
        }
        return unsent
    }
}

/// Runs the given services (producer, relays) around `body`, then cancels them.
func withRunning<T: Sendable>(_ services: [@Sendable () async throws -> Void], _ body: () async throws -> T)
    async throws -> T
{
    try await withThrowingTaskGroup(of: Void.self) { group in
        for service in services { group.addTask { try await service() } }
        defer { group.cancelAll() }
        return try await body()
    }
}

/// The event id inside a published test payload.
func eventID(of message: KafkaConsumerMessage) -> UUID? {
    struct Payload: Decodable { let id: UUID }
    return try? JSONDecoder().decode(Payload.self, from: Data(message.value)).id
}
