import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyTestSupport

/// Publishes `ClientRevoked` events (and garbage) to the embedded cluster, as the gateway's outbox relay would.
enum RevocationPublisher {
    static func revoke(tenant: String, clientID: String, on cluster: EmbeddedKafkaCluster) async throws {
        let event = CloudEvent(
            source: EventSource.registrationGateway,
            data: ClientRevoked(
                tenant: TenantSlug(rawValue: tenant)!, clientID: clientID, reason: .admin,
                reasonDetail: "device reported stolen",
                actor: .admin("security-team"), revokedAt: Date()))
        try await publish(key: event.kafkaKey, value: Array(try event.encoded()), on: cluster)
    }

    /// `UserDisabled` (or, with `disabled` false, `UserEnabled`) for `userID` of `tenant`.
    static func setUser(tenant: String, userID: UUID, disabled: Bool, on cluster: EmbeddedKafkaCluster) async throws {
        let slug = TenantSlug(rawValue: tenant)!
        let key: String
        let value: [UInt8]
        if disabled {
            let event = CloudEvent(
                source: EventSource.registrationGateway,
                data: UserDisabled(
                    tenant: slug, userID: userID, reason: "account compromised", actor: .admin("security-team"),
                    disabledAt: Date()))
            (key, value) = (event.kafkaKey, Array(try event.encoded()))
        } else {
            let event = CloudEvent(
                source: EventSource.registrationGateway,
                data: UserEnabled(
                    tenant: slug, userID: userID, reason: "password reset", actor: .admin("security-team"),
                    enabledAt: Date()))
            (key, value) = (event.kafkaKey, Array(try event.encoded()))
        }
        try await publish(key: key, value: value, topic: SidecarFixtures.userDisabledTopic, on: cluster)
    }

    static func publish(
        key: String, value: [UInt8], topic: String = SidecarFixtures.revokedTopic, on cluster: EmbeddedKafkaCluster
    ) async throws {
        let configuration = KafkaTestSupport.configuration(cluster, clientID: "test-revocations")
        let producer = try KafkaProducer(configuration: configuration, logger: TestServiceSettings.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await producer.run() }
            _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: Array(key.utf8), value: value))
            group.cancelAll()
            try? await group.waitForAll()
        }
    }
}
