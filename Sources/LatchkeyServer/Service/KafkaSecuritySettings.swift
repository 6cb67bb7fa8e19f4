import Foundation
import LatchkeyCore
import LatchkeyKafka

extension KafkaSecurity {
    /// Reads `KAFKA_SECURITY_PROTOCOL`, `KAFKA_SASL_MECHANISM`, `KAFKA_SASL_USERNAME`, `KAFKA_SASL_PASSWORD`,
    /// `KAFKA_SSL_CA_LOCATION`, `KAFKA_SSL_CERTIFICATE_LOCATION`, `KAFKA_SSL_KEY_LOCATION` and
    /// `KAFKA_SSL_KEY_PASSWORD` (the passwords also as `_FILE`). A setting the protocol would ignore is an error
    /// rather than silently unused: credentials meant for SASL must never travel unauthenticated by mistake.
    public init(_ env: SettingsReader) throws {
        let names = SecurityProtocol.allCases.map(\.rawValue).joined(separator: ", ")
        let securityProtocol = try env.parse(
            "kafka.security.protocol", default: SecurityProtocol.plaintext, expected: "one of \(names)"
        ) { SecurityProtocol(rawValue: $0.uppercased()) }
        let protocolName = securityProtocol.rawValue

        var sasl: SASL?
        let mechanisms = SASLMechanism.allCases.map(\.rawValue).joined(separator: ", ")
        let mechanism = try env.parse(
            "kafka.sasl.mechanism", default: SASLMechanism?.none, expected: "one of \(mechanisms)"
        ) { SASLMechanism(rawValue: $0.uppercased()) }
        let username = env.text("kafka.sasl.username")
        let password = try env.secretText("kafka.sasl.password")
        if securityProtocol.usesSASL {
            guard let mechanism else {
                throw ConfigurationError("KAFKA_SASL_MECHANISM is required with \(protocolName) (one of \(mechanisms))")
            }
            guard let username else { throw ConfigurationError("KAFKA_SASL_USERNAME is required with \(protocolName)") }
            guard let password else {
                throw ConfigurationError(
                    "KAFKA_SASL_PASSWORD (or KAFKA_SASL_PASSWORD_FILE) is required with \(protocolName)")
            }
            sasl = SASL(mechanism: mechanism, username: username, password: password)
        } else if let set = [
            ("KAFKA_SASL_MECHANISM", mechanism != nil), ("KAFKA_SASL_USERNAME", username != nil),
            ("KAFKA_SASL_PASSWORD", password != nil),
        ].first(where: \.1) {
            throw ConfigurationError(
                "\(set.0) is set but KAFKA_SECURITY_PROTOCOL is \(protocolName): use SASL_SSL or SASL_PLAINTEXT")
        }

        let tls = TLS(
            caLocation: try Self.readableFile(env, "kafka.ssl.ca.location"),
            certificateLocation: try Self.readableFile(env, "kafka.ssl.certificate.location"),
            keyLocation: try Self.readableFile(env, "kafka.ssl.key.location"),
            keyPassword: try env.secretText("kafka.ssl.key.password"))
        if !securityProtocol.usesTLS, tls != TLS() {
            throw ConfigurationError(
                "KAFKA_SSL_* settings are set but KAFKA_SECURITY_PROTOCOL is \(protocolName): use SSL or SASL_SSL")
        }
        guard (tls.certificateLocation == nil) == (tls.keyLocation == nil) else {
            throw ConfigurationError("KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together")
        }
        if tls.keyPassword != nil, tls.keyLocation == nil {
            throw ConfigurationError("KAFKA_SSL_KEY_PASSWORD is set without KAFKA_SSL_KEY_LOCATION")
        }
        self.init(securityProtocol: securityProtocol, sasl: sasl, tls: tls)
    }

    /// A path setting whose file must be readable now: a wrong mount fails at start-up naming the variable, not
    /// later as a broker connection error.
    private static func readableFile(_ env: SettingsReader, _ key: String) throws -> String? {
        guard let path = env.text(key) else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationError(
                "\(SettingsReader.environmentName(key)) names a file that cannot be read (\(path))")
        }
        return path
    }
}
