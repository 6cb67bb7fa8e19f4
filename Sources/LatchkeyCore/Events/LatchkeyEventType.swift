import Foundation

/// Every event Latchkey emits, by its CloudEvents `type`; each has its own schema and a Kafka topic, which
/// `UserDisabled` and `UserEnabled` share so that a consumer sees them for one user in order.
public enum LatchkeyEventType: String, ProtocolStringEnum {
    case clientRegistered = "io.latchkey.client.registered.v1"
    case tokenIssued = "io.latchkey.token.issued.v1"
    case clientRevoked = "io.latchkey.client.revoked.v1"
    case clientUpdated = "io.latchkey.client.updated.v1"
    case userRegistered = "io.latchkey.user.registered.v1"
    case tokenRevoked = "io.latchkey.token.revoked.v1"
    case refreshTokenReuseDetected = "io.latchkey.refresh_token.reuse_detected.v1"
    case userDisabled = "io.latchkey.user.disabled.v1"
    case userEnabled = "io.latchkey.user.enabled.v1"
    case userPasswordChanged = "io.latchkey.user.password_changed.v1"

    public static var valueDescription: String { "event type" }

    /// The default topic prefix; deployments may configure another (`KAFKA_TOPIC_PREFIX`).
    public static let defaultTopicPrefix = "latchkey."

    /// The CloudEvents `type` attribute.
    public var cloudEventType: String { rawValue }

    /// The topic name without prefix.
    public var topicSuffix: String {
        switch self {
        case .clientRegistered: return "client-registered"
        case .tokenIssued: return "token-issued"
        case .clientRevoked: return "client-revoked"
        case .clientUpdated: return "client-updated"
        case .userRegistered: return "user-registered"
        case .tokenRevoked: return "token-revoked"
        case .refreshTokenReuseDetected: return "refresh-token-reuse-detected"
        case .userDisabled, .userEnabled: return "user-disabled"
        case .userPasswordChanged: return "user-password-changed"
        }
    }

    /// The Kafka topic, e.g. `latchkey.client-registered`.
    public func topic(prefix: String = LatchkeyEventType.defaultTopicPrefix) -> String {
        prefix + topicSuffix
    }

    /// How long the revocation topics keep a record: sidecars rebuild their revocations from them at every start,
    /// so a record must outlive every token it ended. Seven days is well above the longest access-token lifetime
    /// a sidecar accepts by default (one day, `DPOP_MAX_TOKEN_LIFETIME_SECONDS`) plus its skew.
    public static let revocationRetentionMilliseconds: Int64 = 604_800_000

    /// Topic settings this event type's topic needs, for every place that creates topics (the embedded cluster, the
    /// compose job, the Kubernetes topics). `ClientRevoked` names one client per key, so compaction keeps one record
    /// per client, and deletion drops it well after no token of the client can be valid any more. `TokenRevoked` is never compacted:
    /// the records of one client name different tokens. `UserDisabled`/`UserEnabled` keep each user's latest state.
    public var topicConfigs: [String: String] {
        let retention = String(Self.revocationRetentionMilliseconds)
        switch self {
        case .clientRevoked: return ["cleanup.policy": "compact,delete", "retention.ms": retention]
        case .tokenRevoked: return ["cleanup.policy": "delete", "retention.ms": retention]
        case .userDisabled, .userEnabled: return ["cleanup.policy": "compact"]
        default: return [:]
        }
    }

    /// The first event type whose topic is `topic` under `prefix` (a shared topic carries several types).
    public init?(topic: String, prefix: String = LatchkeyEventType.defaultTopicPrefix) {
        guard topic.hasPrefix(prefix) else { return nil }
        let suffix = topic.dropFirst(prefix.count)
        guard let match = Self.allCases.first(where: { $0.topicSuffix == suffix }) else { return nil }
        self = match
    }

    /// The topic where the audit consumer parks records it cannot ingest, under `prefix`.
    public static func deadLetterTopic(prefix: String = LatchkeyEventType.defaultTopicPrefix) -> String {
        prefix + "dead-letter"
    }

    /// Every topic under `prefix`, once each, for topic creation and an audit consumer's subscription.
    public static func allTopics(prefix: String = LatchkeyEventType.defaultTopicPrefix) -> [String] {
        var seen = Set<String>()
        return allCases.map { $0.topic(prefix: prefix) }.filter { seen.insert($0).inserted }
    }

    /// Whether the CloudEvents `subject` (and the Kafka key's second half) is `data.user_id` rather than a client id.
    public var isUserEvent: Bool {
        switch self {
        case .userRegistered, .userDisabled, .userEnabled, .userPasswordChanged: return true
        default: return false
        }
    }

    /// File name of the JSON Schema of the whole CloudEvent, e.g. `io.latchkey.client.registered.v1.schema.json`.
    public var schemaFileName: String { rawValue + ".schema.json" }

    /// The Kafka message key `{tenant}/{client_id}`: one partition per client keeps its events in order.
    public static func kafkaKey(tenant: TenantSlug, clientID: String) -> String {
        "\(tenant.rawValue)/\(clientID)"
    }

    /// Splits a key made by `kafkaKey(tenant:clientID:)`; `nil` when it is not one.
    public static func parseKafkaKey(_ key: String) -> (tenant: TenantSlug, clientID: String)? {
        guard let slash = key.firstIndex(of: "/"), let tenant = TenantSlug(rawValue: String(key[..<slash])) else {
            return nil
        }
        let clientID = String(key[key.index(after: slash)...])
        return clientID.isEmpty ? nil : (tenant, clientID)
    }
}
