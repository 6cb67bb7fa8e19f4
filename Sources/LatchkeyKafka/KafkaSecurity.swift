/// How clients authenticate to the brokers and protect the connection: librdkafka's `security.protocol`, SASL and
/// SSL properties. Its description never shows the passwords.
public struct KafkaSecurity: Sendable, Equatable, CustomStringConvertible {
    /// librdkafka's `security.protocol`.
    public enum SecurityProtocol: String, Sendable, CaseIterable {
        case plaintext = "PLAINTEXT"
        case ssl = "SSL"
        case saslPlaintext = "SASL_PLAINTEXT"
        case saslSSL = "SASL_SSL"

        public var usesSASL: Bool { self == .saslPlaintext || self == .saslSSL }
        public var usesTLS: Bool { self == .ssl || self == .saslSSL }
    }

    /// librdkafka's `sasl.mechanisms`: the username/password mechanisms Kafka brokers (and Strimzi) offer.
    public enum SASLMechanism: String, Sendable, CaseIterable {
        case plain = "PLAIN"
        case scramSHA256 = "SCRAM-SHA-256"
        case scramSHA512 = "SCRAM-SHA-512"
    }

    /// SASL credentials; the password is kept out of every description.
    public struct SASL: Sendable, Equatable {
        public var mechanism: SASLMechanism
        public var username: String
        public var password: String

        public init(mechanism: SASLMechanism, username: String, password: String) {
            self.mechanism = mechanism
            self.username = username
            self.password = password
        }
    }

    /// TLS material as PEM files; nil fields use librdkafka's defaults (the system trust store, no client
    /// certificate).
    public struct TLS: Sendable, Equatable {
        /// CA certificate(s) the brokers' certificates must chain to (`ssl.ca.location`).
        public var caLocation: String?
        /// Client certificate for mutual TLS (`ssl.certificate.location`).
        public var certificateLocation: String?
        /// Its private key (`ssl.key.location`), encrypted with `keyPassword` when that is set.
        public var keyLocation: String?
        public var keyPassword: String?

        public init(
            caLocation: String? = nil, certificateLocation: String? = nil, keyLocation: String? = nil,
            keyPassword: String? = nil
        ) {
            self.caLocation = caLocation
            self.certificateLocation = certificateLocation
            self.keyLocation = keyLocation
            self.keyPassword = keyPassword
        }
    }

    public var securityProtocol: SecurityProtocol
    /// Present exactly when the protocol uses SASL.
    public var sasl: SASL?
    public var tls: TLS

    /// PLAINTEXT: no TLS, no authentication.
    public static let plaintext = KafkaSecurity(securityProtocol: .plaintext)

    public init(securityProtocol: SecurityProtocol, sasl: SASL? = nil, tls: TLS = TLS()) {
        self.securityProtocol = securityProtocol
        self.sasl = sasl
        self.tls = tls
    }

    /// The librdkafka properties, for every producer, consumer and admin client.
    public var properties: [String: String] {
        var properties = ["security.protocol": securityProtocol.rawValue.lowercased()]
        if let sasl {
            properties["sasl.mechanisms"] = sasl.mechanism.rawValue
            properties["sasl.username"] = sasl.username
            properties["sasl.password"] = sasl.password
        }
        properties["ssl.ca.location"] = tls.caLocation
        properties["ssl.certificate.location"] = tls.certificateLocation
        properties["ssl.key.location"] = tls.keyLocation
        properties["ssl.key.password"] = tls.keyPassword
        return properties
    }

    /// Names of the properties that hold secrets.
    public static let secretProperties: Set<String> = ["sasl.password", "ssl.key.password"]

    public var description: String {
        var parts = [securityProtocol.rawValue]
        if let sasl { parts.append("\(sasl.mechanism.rawValue) as \(sasl.username)") }
        if let ca = tls.caLocation { parts.append("CA \(ca)") }
        if let certificate = tls.certificateLocation { parts.append("client certificate \(certificate)") }
        return parts.joined(separator: ", ")
    }
}
