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
            let clientID = try await app.test(.router) { client in
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", token: token, json: RegistrationEndpointTests.native)
                #expect(response.status == .created)
                let clientID = try #require(response.json["client_id"] as? String)
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
