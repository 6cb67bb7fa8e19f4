import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// `TokenIssued` travels outbox → relay → Kafka. Runs on a scratch database so no other test's relay
/// (they share the test database) can publish this test's rows to another cluster.
@Suite struct TokenIssuedKafkaTests {
    @Test func issuedTokensArePublishedToKafkaWithoutTokenValues() async throws {
        try await TestDatabase.withScratchDatabase { owner in
            try await TestDatabase.migrate(owner)
            let cluster = try EmbeddedKafkaCluster(brokers: 1)
            defer { cluster.shutdown() }
            let topic = LatchkeyEventType.tokenIssued.topic(prefix: LatchkeyEventType.defaultTopicPrefix)
            try cluster.createTopic(topic, partitions: 1)
            var serviceSettings = try await TestServiceSettings.make(
                .tokenService, kafkaBrokers: cluster.bootstrapServers)
            serviceSettings.database?.database = owner.database
            serviceSettings.systemDatabase?.database = owner.database
            let settings = try TokenServiceHarness.makeSettings()
            try await withPostgresClient(try #require(serviceSettings.database)) { appClient in
                let database = Database(client: appClient, logger: TestEnvironment.logger)
                let fixture = TokenServiceHarness(
                    tenant: TestEnvironment.uniqueTenant("tok"), settings: settings, database: database,
                    databaseName: owner.database)
                try await TestDatabase.createTenant(
                    fixture.tenant, in: database, policy: TokenServiceHarness.withTestScopes("{}"))
                let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
                // Built right before it runs (an application released unrun traps in AsyncHTTPClient).
                let app = try buildApplication(
                    settings: serviceSettings, tokenSettings: settings, logger: TestServiceSettings.logger)
                try await app.test(.router) { client in
                    let issued = try await ClientCredentials.token(client, fixture, "svc", secret)
                    let jti = try CompactJWS(parsing: issued.accessToken).claims(as: AccessTokenClaims.self).jti
                    let consumer = try KafkaConsumer(
                        configuration: KafkaTestSupport.configuration(cluster, clientID: "token-issued-check"),
                        groupID: "g-\(UUID().uuidString)",
                        subscription: .allPartitions(of: [topic], startingAt: .beginning),
                        logger: TestEnvironment.logger)
                    let message = try await Self.first(of: consumer, within: .seconds(30))
                    await consumer.close()
                    let value = String(decoding: message.value, as: UTF8.self)
                    let event = try CloudEvent<TokenIssued>.decode(from: Data(message.value))
                    #expect(event.data.jti == jti)
                    #expect(event.tenantID.rawValue == fixture.tenant)
                    #expect(message.key.map { String(decoding: $0, as: UTF8.self) } == "\(fixture.tenant)/svc")
                    #expect(!value.contains(issued.accessToken.split(separator: ".")[2]))
                    #expect(!value.contains(secret))
                }
            }
        }
    }

    static func first(of consumer: KafkaConsumer, within timeout: Duration) async throws -> KafkaConsumerMessage {
        try await withThrowingTaskGroup(of: KafkaConsumerMessage?.self) { group in
            group.addTask {
                for try await message in consumer.messages { return message }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let message = try await group.next() ?? nil else { throw KafkaTimeout() }
            return message
        }
    }

    struct KafkaTimeout: Error {}
}
