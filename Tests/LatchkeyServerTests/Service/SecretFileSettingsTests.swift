import Configuration
import Foundation
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore
@testable import LatchkeyKafka
@testable import LatchkeyPersistence

/// Every secret setting can come from a file named by `NAME_FILE` (a Kubernetes Secret mounted as a file).
@Suite struct SecretFileSettingsTests {
    func reader(_ environment: [String: String]) -> SettingsReader {
        SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: environment)]))
    }

    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder(prefix: "secret")
    }

    /// A file in the suite's temporary folder holding `contents`.
    func file(_ contents: String) throws -> String {
        try folder.file(contents)
    }

    func configurationError(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func aSecretIsReadFromItsFileWithOneTrailingNewlineDropped() throws {
        #expect(try reader(["SECRET_HASH_KEY_FILE": try file("abc\n")]).secretText("secret.hash.key") == "abc")
        #expect(try reader(["SECRET_HASH_KEY_FILE": try file("abc\r\n")]).secretText("secret.hash.key") == "abc")
        #expect(try reader(["SECRET_HASH_KEY_FILE": try file("abc\n\n")]).secretText("secret.hash.key") == "abc\n")
        #expect(try reader(["SECRET_HASH_KEY_FILE": try file(" a b ")]).secretText("secret.hash.key") == " a b ")
        #expect(try reader(["SECRET_HASH_KEY": "inline"]).secretText("secret.hash.key") == "inline")
        #expect(try reader(["SECRET_HASH_KEY": ""]).secretText("secret.hash.key") == nil)
        #expect(try reader([:]).secretText("secret.hash.key") == nil)
    }

    @Test func bothTheValueAndItsFileAreRefused() throws {
        let path = try file("from-file")
        let message = configurationError {
            _ = try reader(["SECRET_HASH_KEY": "inline", "SECRET_HASH_KEY_FILE": path]).secretText("secret.hash.key")
        }
        #expect(message?.contains("SECRET_HASH_KEY and SECRET_HASH_KEY_FILE are both set") == true, "\(message ?? "")")
    }

    @Test func anUnreadableOrEmptyFileIsRefusedWithoutItsContents() throws {
        let missing = configurationError {
            _ = try reader(["DATABASE_URL_FILE": "/nonexistent/latchkey/url"]).secretText("database.url")
        }
        #expect(
            missing?.contains("DATABASE_URL_FILE names a file that cannot be read (/nonexistent/latchkey/url)") == true)
        let directory = configurationError {
            _ = try reader(["DATABASE_URL_FILE": folder.url.path]).secretText("database.url")
        }
        #expect(directory?.contains("DATABASE_URL_FILE names a file that cannot be read") == true)
        let empty = configurationError {
            _ = try reader(["DATABASE_URL_FILE": try file("\n")]).secretText("database.url")
        }
        #expect(empty?.contains("DATABASE_URL_FILE names an empty file") == true)
    }

    @Test func requiredSecretsAndSecretListsReadFiles() throws {
        let key = KeyMaterial.generateConfigurationValue()
        let previous = [KeyMaterial.generateConfigurationValue(), KeyMaterial.generateConfigurationValue()]
        let env = reader([
            "DPOP_NONCE_SECRET_FILE": try file(key + "\n"),
            "KEY_ENCRYPTION_KEY_PREVIOUS_FILE": try file(previous.joined(separator: "\n") + "\n"),
        ])
        #expect(try env.required("dpop.nonce.secret", secret: true) == key)
        #expect(try env.requiredSecret("dpop.nonce.secret") { $0 } == key)
        #expect(try env.secretList("key.encryption.key.previous") == previous)
        let message = configurationError { _ = try env.required("secret.hash.key", secret: true) }
        #expect(message?.contains("SECRET_HASH_KEY is required") == true)
    }

    /// The token service as a process, every secret given as a file only: it starts and becomes healthy; the same
    /// with one secret also set inline stops at start-up naming both variables.
    @Test func aServiceStartsWithEverySecretInAFile() async throws {
        try await TestDatabase.prepare()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let key = KeyMaterial.generateConfigurationValue
        // The inline variables are blanked: the test process may have them (scripts/test.sh exports the URLs).
        var environment = [
            "DATABASE_URL": "", "DATABASE_SYSTEM_URL": "", "KEY_ENCRYPTION_KEY": "", "SECRET_HASH_KEY": "",
            "DPOP_NONCE_SECRET": "",
            "DATABASE_URL_FILE": try file(try TestEnvironment.appDatabase().url + "\n"),
            "DATABASE_SYSTEM_URL_FILE": try file(try TestEnvironment.systemDatabase().url + "\n"),
            "KEY_ENCRYPTION_KEY_FILE": try file(key() + "\n"), "SECRET_HASH_KEY_FILE": try file(key() + "\n"),
            "DPOP_NONCE_SECRET_FILE": try file(key()), "KAFKA_BROKERS": cluster.bootstrapServers,
            "TOKEN_SERVICE_PUBLIC_URL": "http://127.0.0.1:8082",
            "REGISTRATION_GATEWAY_PUBLIC_URL": "http://127.0.0.1:8081",
        ]
        let process = try ServiceProcess("token-service", environment: environment)
        let healthy = await process.waitUntilHealthy(timeout: .seconds(60))
        #expect(healthy, "\(process.capturedOutput().suffix(3_000))")
        #expect(await process.stop() == 0)

        environment["SECRET_HASH_KEY"] = key()
        let refused = try ServiceProcess("token-service", environment: environment)
        let status = await refused.waitForExit(timeout: .seconds(30))
        #expect(status == 1)
        #expect(refused.capturedOutput().contains("SECRET_HASH_KEY and SECRET_HASH_KEY_FILE are both set"))
    }
}
