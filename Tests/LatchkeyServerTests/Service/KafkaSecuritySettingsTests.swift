import AsyncHTTPClient
import Configuration
import Foundation
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import Testing

@testable import LatchkeyCore
@testable import LatchkeyKafka
@testable import LatchkeyPersistence

/// `KAFKA_SECURITY_PROTOCOL` and the SASL/SSL settings: validated at start-up, passed to librdkafka, passwords
/// never shown.
@Suite struct KafkaSecuritySettingsTests {
    func security(_ environment: [String: String]) throws -> KafkaSecurity {
        try KafkaSecurity(
            SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: environment)])))
    }

    func refusal(_ environment: [String: String]) -> String {
        do {
            _ = try security(environment)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder(prefix: "kafka")
    }

    /// A readable file in the suite's temporary folder.
    func file(_ contents: String = "-----BEGIN CERTIFICATE-----\n") throws -> String {
        try folder.file(contents)
    }

    @Test func plaintextByDefault() throws {
        let security = try security([:])
        #expect(security == .plaintext)
        #expect(security.properties == ["security.protocol": "plaintext"])
        var configuration = KafkaConfiguration(bootstrapServers: "b:9092", clientID: "c")
        #expect(configuration.adminProperties()["security.protocol"] == "plaintext")
        configuration.security = try self.security([
            "KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CA_LOCATION": try file(),
        ])
        // Every kind of client gets the settings.
        #expect(configuration.producerProperties()["security.protocol"] == "ssl")
        #expect(configuration.consumerProperties(groupID: "g")["security.protocol"] == "ssl")
        #expect(configuration.adminProperties()["ssl.ca.location"] == configuration.security.tls.caLocation)
    }

    @Test func saslOverTLSWithEverySetting() throws {
        let ca = try file()
        let certificate = try file()
        let key = try file("-----BEGIN PRIVATE KEY-----\n")
        let security = try security([
            "KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "KAFKA_SASL_USERNAME": "token-service", "KAFKA_SASL_PASSWORD_FILE": try file("s3cr3t-sasl\n"),
            "KAFKA_SSL_CA_LOCATION": ca, "KAFKA_SSL_CERTIFICATE_LOCATION": certificate, "KAFKA_SSL_KEY_LOCATION": key,
            "KAFKA_SSL_KEY_PASSWORD": "s3cr3t-key",
        ])
        #expect(
            security.properties == [
                "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "token-service",
                "sasl.password": "s3cr3t-sasl", "ssl.ca.location": ca, "ssl.certificate.location": certificate,
                "ssl.key.location": key, "ssl.key.password": "s3cr3t-key",
            ])
        #expect(!"\(security)".contains("s3cr3t"))
        #expect("\(security)".contains("SCRAM-SHA-512 as token-service"))
        for mechanism in ["PLAIN", "SCRAM-SHA-256"] {
            let plain = try self.security([
                "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_MECHANISM": mechanism,
                "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p",
            ])
            #expect(plain.properties["sasl.mechanisms"] == mechanism)
        }
    }

    @Test func wrongSettingsAreRefusedNamingTheSetting() throws {
        let sasl = ["KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_MECHANISM": "PLAIN"]
        let cases: [([String: String], String)] = [
            (
                ["KAFKA_SECURITY_PROTOCOL": "TLS"],
                "KAFKA_SECURITY_PROTOCOL must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
            ),
            (
                sasl.merging(["KAFKA_SASL_MECHANISM": "GSSAPI"]) { $1 },
                "KAFKA_SASL_MECHANISM must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
            ),
            (["KAFKA_SECURITY_PROTOCOL": "SASL_SSL"], "KAFKA_SASL_MECHANISM is required with SASL_SSL"),
            (sasl, "KAFKA_SASL_USERNAME is required with SASL_SSL"),
            (
                sasl.merging(["KAFKA_SASL_USERNAME": "u"]) { $1 },
                "KAFKA_SASL_PASSWORD (or KAFKA_SASL_PASSWORD_FILE) is required with SASL_SSL"
            ),
            (
                ["KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"],
                "KAFKA_SASL_USERNAME is set but KAFKA_SECURITY_PROTOCOL is PLAINTEXT"
            ),
            (
                ["KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SSL_CA_LOCATION": try file()]
                    .merging(["KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"])
                { $1 },
                "KAFKA_SSL_* settings are set but KAFKA_SECURITY_PROTOCOL is SASL_PLAINTEXT"
            ),
            (
                ["KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CA_LOCATION": "/nonexistent/ca.pem"],
                "KAFKA_SSL_CA_LOCATION names a file that cannot be read (/nonexistent/ca.pem)"
            ),
            (
                ["KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CERTIFICATE_LOCATION": try file()],
                "KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together"
            ),
            (
                ["KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_KEY_PASSWORD": "p"],
                "KAFKA_SSL_KEY_PASSWORD is set without KAFKA_SSL_KEY_LOCATION"
            ),
        ]
        for (environment, expected) in cases {
            let message = refusal(environment)
            #expect(message.contains(expected), "\(environment): \(message)")
        }
    }

    // MARK: The settings reach librdkafka in a running service

    func auditConsumerEnvironment(kafka: String) throws -> [String: String] {
        return [
            "DATABASE_URL": try TestEnvironment.appDatabase().url,
            "DATABASE_SYSTEM_URL": try TestEnvironment.systemDatabase().url, "KAFKA_BROKERS": kafka,
        ]
    }

    /// `/readyz`: the status line (e.g. `503 Service Unavailable`) and the body.
    func readiness(_ process: ServiceProcess) async throws -> (status: String, body: String) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "\(process.managementURL)/readyz"), timeout: .seconds(10))
        return ("\(response.status)", String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// The embedded cluster listens in plaintext: a service told to use TLS must fail the TLS handshake there,
    /// which proves librdkafka got the protocol, and report Kafka failing on `/readyz`.
    @Test func tlsReachesLibrdkafkaAndFailsAgainstAPlaintextListener() async throws {
        try await TestDatabase.prepare()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        var environment = try auditConsumerEnvironment(kafka: cluster.bootstrapServers)
        environment["KAFKA_SECURITY_PROTOCOL"] = "SSL"
        let process = try ServiceProcess("audit-consumer", environment: environment)
        let healthy = await process.waitUntilHealthy(timeout: .seconds(60))
        #expect(healthy, "\(process.capturedOutput().suffix(3_000))")
        let handshakeFailed = try await eventually(within: .seconds(30)) {
            process.capturedOutput().contains("SSL handshake failed")
        }
        #expect(handshakeFailed, "\(process.capturedOutput().suffix(3_000))")
        let ready = try await readiness(process)
        #expect(ready.status.hasPrefix("503") && ready.body.contains(#""kafka":"failing""#), "\(ready)")
        #expect(process.capturedOutput().contains("kafka_security=SSL"))
        _ = await process.stop()
    }

    /// SASL credentials go to the brokers, never to the log, whatever the log level; a mechanism librdkafka does not
    /// get from us is refused before anything starts.
    @Test func saslPasswordsStayOutOfTheLogAndAnUnknownMechanismStopsTheStart() async throws {
        try await TestDatabase.prepare()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let password = "never-logged-\(UUID().uuidString)"
        var environment = try auditConsumerEnvironment(kafka: cluster.bootstrapServers)
        environment.merge([
            "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "KAFKA_SASL_USERNAME": "audit-consumer", "KAFKA_SASL_PASSWORD_FILE": try file(password + "\n"),
            "LOG_LEVEL": "trace",
        ]) { $1 }
        let process = try ServiceProcess("audit-consumer", environment: environment)
        let healthy = await process.waitUntilHealthy(timeout: .seconds(60))
        #expect(healthy, "\(process.capturedOutput().suffix(3_000))")
        // Long enough for librdkafka to connect, authenticate and report what the mock broker answered.
        _ = try await eventually(within: .seconds(15)) { process.capturedOutput().contains("SASL") }
        _ = await process.stop()
        let output = process.capturedOutput()
        #expect(output.contains("SASL_PLAINTEXT, SCRAM-SHA-512 as audit-consumer"), "\(output.suffix(3_000))")
        #expect(!output.contains(password))

        environment["KAFKA_SASL_MECHANISM"] = "GSSAPI"
        let refused = try ServiceProcess("audit-consumer", environment: environment)
        #expect(await refused.waitForExit(timeout: .seconds(30)) == 1)
        #expect(refused.capturedOutput().contains("KAFKA_SASL_MECHANISM must be one of"))
        #expect(!refused.capturedOutput().contains(password))
    }
}
