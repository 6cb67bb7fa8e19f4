import ArgumentParser
import Configuration
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// `latchkey keys list|rotate --tenant T`: a tenant's signing keys, and staging the next one.
///
/// Connects with `DATABASE_URL` (the tenant-scoped role; `DATABASE_MIGRATION_URL` when unset) and seals
/// new keys with `KEY_ENCRYPTION_KEY`. The token service's lifecycle job activates a staged key after
/// its publish delay and retires the old one when its tokens have expired.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List or rotate a tenant's token-signing keys.",
        subcommands: [List.self, Rotate.self])

    struct Options: ParsableArguments {
        @Option(help: "The tenant id.") var tenant: String
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the tenant's keys: kid, alg, status and dates.")
        @OptionGroup var options: Options

        func run() async throws {
            let tenant = try KeysCommand.tenant(options)
            let keys = try await KeysCommand.withRotation(envelope: nil) { try await $0.list(tenant: tenant) }
            let now = Date()
            print(
                ["KID", "ALG", "STATUS", "CREATED", "ACTIVATED", "RETIRE AFTER", "STAGED BY"].joined(separator: "\t"))
            for key in keys {
                let dates = [key.createdAt, key.activatedAt, key.publishUntil].map {
                    $0.map(RFC3339Timestamp.string(from:)) ?? "-"
                }
                print(
                    ([key.kid, key.algorithm, key.lifecycleName(at: now)] + dates + [key.stagedBy ?? "-"]).joined(
                        separator: "\t"))
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stage the next key (published now, signing after the token service's publish delay).")
        @OptionGroup var options: Options
        @Option(
            help: "ES256, RS256 or EdDSA (default: the policy's signing_algorithm; another one updates the policy).")
        var algorithm: String?
        @Option(help: "Recorded as the key's staged_by (default: cli:$USER).") var actor: String?

        func run() async throws {
            let tenant = try KeysCommand.tenant(options)
            var chosen: JWSAlgorithm?
            if let algorithm {
                guard let parsed = JWSAlgorithm(parsing: algorithm), TenantPolicy.signingAlgorithms.contains(parsed)
                else {
                    throw ValidationError(SigningKeyRotationError.unsupportedAlgorithm(algorithm).description)
                }
                chosen = parsed
            }
            let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
            guard let kek = try env.secretText("key.encryption.key") else {
                throw ValidationError("KEY_ENCRYPTION_KEY is required to seal the new key")
            }
            let envelope: KeyEnvelope
            do { envelope = try KeyEnvelope(configuration: kek) } catch {
                throw ValidationError("KEY_ENCRYPTION_KEY must be 32 bytes, base64")
            }
            let who = actor ?? "cli:\(ProcessInfo.processInfo.environment["USER"] ?? "operator")"
            let requested = chosen
            let rotated = try await KeysCommand.withRotation(envelope: envelope) {
                try await $0.rotate(tenant: tenant, algorithm: requested, actor: who)
            }
            print(
                "staged \(rotated.key.kid) (\(rotated.key.algorithm)) for tenant \(tenant)"
                    + (rotated.policyVersion.map { "; policy version \($0) signs with \(rotated.key.algorithm)" } ?? "")
            )
        }
    }

    static func tenant(_ options: Options) throws -> String {
        guard let slug = TenantSlug(rawValue: options.tenant) else {
            throw ValidationError("--tenant is not a valid tenant id")
        }
        return slug.rawValue
    }

    /// Runs `body` with a rotation on a short-lived pool; public listings need no real envelope.
    static func withRotation<T: Sendable>(
        envelope: KeyEnvelope?, _ body: @escaping @Sendable (SigningKeyRotation) async throws -> T
    ) async throws -> T {
        let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
        guard let url = try env.secretText("database.url") ?? env.secretText("database.migration.url")
        else { throw ValidationError("DATABASE_URL (or DATABASE_MIGRATION_URL) is required") }
        let logger = Logger(label: "latchkey.keys")
        let client = try DatabaseConfiguration(url: url).onDemand.makeClient(logger: logger)
        let keys = TenantSigningKeys(
            envelope: try envelope ?? KeyEnvelope(configuration: KeyMaterial.generateConfigurationValue()))
        let rotation = SigningKeyRotation(keys: keys, database: Database(client: client, logger: logger))
        return try await withRunningPool(client) {
            do {
                return try await body(rotation)
            } catch let error as SigningKeyRotationError {
                throw ValidationError(error.description)
            }
        }
    }
}
