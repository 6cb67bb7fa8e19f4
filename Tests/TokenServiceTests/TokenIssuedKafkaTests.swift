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

@testable import TokenService

/// `TokenIssued` travels outbox → relay → Kafka. Runs on a scratch database so no other test's relay
/// (they share the test database) can publish this test's rows to another cluster.
@Suite struct TokenIssuedKafkaTests {
    @Test func issuedTokensArePublishedToKafkaWithoutTokenValues() async throws {
        try await Self.withTokenServiceOnKafka { setup in
            let issued = try await ClientCredentials.token(setup.client, setup.fixture, "svc", setup.secret)
            let jti = try CompactJWS(parsing: issued.accessToken).claims(as: AccessTokenClaims.self).jti
            let message = try #require(try await setup.consume(1).first)
            let value = String(decoding: message.value, as: UTF8.self)
            let event = try CloudEvent<TokenIssued>.decode(from: Data(message.value))
            #expect(event.data.jti == jti)
            #expect(event.tenantID.rawValue == setup.fixture.tenant)
            #expect(message.key.map { String(decoding: $0, as: UTF8.self) } == "\(setup.fixture.tenant)/svc")
            #expect(!value.contains(issued.accessToken.split(separator: ".")[2]))
            #expect(!value.contains(setup.secret))
        }
    }

    /// A `NOTIFY` makes concurrent commits wait for one another, so a grant's one statement sends none: the
    /// service wakes its own relay, and every grant's event is still published.
    @Test func grantsWakeTheirOwnRelayWithoutANotification() async throws {
        try await Self.withTokenServiceOnKafka { setup in
            let probe = NotificationProbe(
                channel: OutboxRelay.notificationChannel, client: setup.systemClient, logger: TestEnvironment.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await probe.run() }
                defer { group.cancelAll() }
                _ = try await probe.heardSinceLastCall()
                var issued: Set<String> = []
                for _ in 1...3 {
                    let token = try await ClientCredentials.token(setup.client, setup.fixture, "svc", setup.secret)
                    issued.insert(try CompactJWS(parsing: token.accessToken).claims(as: AccessTokenClaims.self).jti)
                }
                #expect(try await probe.heardSinceLastCall() == [], "a grant notified the outbox channel")
                let published = try await setup.consume(3).map {
                    try CloudEvent<TokenIssued>.decode(from: Data($0.value)).data.jti
                }
                #expect(Set(published) == issued)
            }
        }
    }

    /// What a test of the running token service on its own database and Kafka cluster works with.
    struct Setup: Sendable {
        let client: any TestClientProtocol
        let fixture: TokenServiceHarness
        let secret: String
        let systemClient: PostgresClient
        let consume: @Sendable (Int) async throws -> [KafkaConsumerMessage]
    }

    /// The token service (its relay included) on a scratch database and a one-broker cluster, with a tenant
    /// and a confidential client `svc` allowed scope `api`.
    static func withTokenServiceOnKafka(_ body: @escaping @Sendable (Setup) async throws -> Void) async throws {
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
                try await withPostgresClient(try #require(serviceSettings.systemDatabase)) { systemClient in
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
                    try await app.journaledTest(.router) { client in
                        try await body(
                            Setup(
                                client: client, fixture: fixture, secret: secret, systemClient: systemClient,
                                consume: { count in
                                    try await consume(count, of: topic, from: cluster, within: .seconds(30))
                                }))
                    }
                }
            }
        }
    }

    /// The first `count` messages of `topic`, from the beginning.
    static func consume(
        _ count: Int, of topic: String, from cluster: EmbeddedKafkaCluster, within timeout: Duration
    ) async throws -> [KafkaConsumerMessage] {
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.configuration(cluster, clientID: "token-issued-check"),
            groupID: "g-\(UUID().uuidString)", subscription: .allPartitions(of: [topic], startingAt: .beginning),
            logger: TestEnvironment.logger)
        do {
            let messages = try await first(count, of: consumer, within: timeout)
            await consumer.close()
            return messages
        } catch {
            await consumer.close()
            throw error
        }
    }

    private static func first(
        _ count: Int, of consumer: KafkaConsumer, within timeout: Duration
    ) async throws -> [KafkaConsumerMessage] {
        try await withThrowingTaskGroup(of: [KafkaConsumerMessage]?.self) { group in
            group.addTask {
                var messages: [KafkaConsumerMessage] = []
                for try await message in consumer.messages {
                    messages.append(message)
                    if messages.count == count { return messages }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let messages = try await group.next() ?? nil else { throw KafkaTimeout() }
            return messages
        }
    }

    struct KafkaTimeout: Error {}
}
