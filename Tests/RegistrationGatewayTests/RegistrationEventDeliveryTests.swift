import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import Logging
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationEventDeliveryTests {
    /// In a scratch database (so no other test's relay claims the row), a registration's
    /// `ClientRegistered` reaches the `latchkey.client-registered` topic of the embedded cluster.
    @Test func clientRegisteredReachesKafka() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let topic = LatchkeyEventType.clientRegistered.topic()
        try cluster.createTopic(topic, partitions: 1)
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let settings = try await TestServiceSettings.make(
                .registrationGateway, kafkaBrokers: cluster.bootstrapServers, database: scratch.database)
            let database = try #require(settings.database)
            let h = try await harness(in: database)
            let token = try await h.dcrToken(database: database)
            let app = try buildApplication(
                settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
            let clientID = try await app.journaledTest(.router) { client in
                let clientID = try await Self.withProbe(of: scratch) { probe in
                    _ = try await probe.heardSinceLastCall()
                    let response = try await client.send(
                        .post, "/t/\(h.tenant)/register", token: token, json: RegistrationEndpointTests.native)
                    #expect(response.status == .created)
                    // Its one statement sends no NOTIFY (which would make concurrent commits wait for one
                    // another): the gateway wakes its own relay.
                    #expect(try await probe.heardSinceLastCall() == [], "a registration notified the outbox channel")
                    return try #require(response.json["client_id"] as? String)
                }
                // The relay marks the row sent only after Kafka's delivery report.
                _ = try await eventually(within: .seconds(20)) {
                    let sent = try await withPostgresClient(scratch) { pg in
                        let rows = try await pg.query(
                            "SELECT count(*)::int FROM outbox WHERE sent_at IS NOT NULL", logger: TestEnvironment.logger
                        )
                        for try await count in rows.decode(Int.self) { return count }
                        return 0
                    }
                    return sent == 1
                }
                return clientID
            }
            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "gw-event-check"),
                groupID: "gw-\(UUID().uuidString)", subscription: .allPartitions(of: [topic], startingAt: .beginning),
                logger: TestEnvironment.logger)
            let received = try await withThrowingTaskGroup(of: KafkaConsumerMessage?.self) { group in
                group.addTask {
                    for try await message in consumer.messages { return message }
                    return nil
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
            await consumer.close()
            let message = try #require(received)
            #expect(message.key.map { String(decoding: $0, as: UTF8.self) } == "\(h.tenant)/\(clientID)")
            let event = try CloudEvent<ClientRegistered>.decode(from: Data(message.value))
            #expect(event.data.clientID == clientID)
        }
    }

    /// Runs `body` with a probe of the outbox notification channel of `database`.
    private static func withProbe<T: Sendable>(
        of database: DatabaseConfiguration, _ body: (NotificationProbe) async throws -> T
    ) async throws -> T {
        try await withPostgresClient(database) { pg in
            let probe = NotificationProbe(
                channel: OutboxRelay.notificationChannel, client: pg, logger: TestEnvironment.logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await probe.run() }
                defer { group.cancelAll() }
                return try await body(probe)
            }
        }
    }

    private func harness(in database: DatabaseConfiguration) async throws -> GatewayHarness {
        let tenant = TestEnvironment.uniqueTenant("gwk")
        let user = UUID()
        try await withPostgresClient(database) { client in
            let db = Database(client: client, logger: TestEnvironment.logger)
            try await TestDatabase.createTenant(tenant, in: db)
            try await db.withTenantTransaction(tenant) { connection in
                try await GatewayHarness.signingKeys.createKey(
                    tenant: tenant, status: .active, on: connection, logger: db.logger)
                try await connection.query(
                    "INSERT INTO users (tenant_id, user_id, username) VALUES (\(tenant), \(user), 'bob')",
                    logger: db.logger)
            }
        }
        return GatewayHarness(tenant: tenant, user: user)
    }
}
