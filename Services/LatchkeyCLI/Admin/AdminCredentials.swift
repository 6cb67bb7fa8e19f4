import ArgumentParser
import Configuration
import Foundation
import LatchkeyServer

/// How the CLI proves it is an administrator, read from the environment or files (never from an option's
/// value, which `ps` and shell history would show).
enum AdminCredential: Sendable {
    /// A ready admin access token.
    case token(String)
    /// A static client with scope `admin`, exchanged for a token at its issuer's token endpoint.
    case client(issuer: String, clientID: String, secret: String)
    /// The gateway's bootstrap key: only the first tenant and a tenant's first client.
    case bootstrapKey(String)
}

/// Where the admin API is and which credential to use; shared by every command that talks to it.
struct AdminOptions: ParsableArguments {
    @Option(help: "The registration gateway's base URL (default: $LATCHKEY_ADMIN_URL).")
    var adminURL: String?

    @Option(help: "A file holding the admin client's secret (default: $LATCHKEY_ADMIN_CLIENT_SECRET[_FILE]).")
    var clientSecretFile: String?

    @Option(help: "A file holding the gateway's bootstrap key (default: $LATCHKEY_BOOTSTRAP_KEY[_FILE]).")
    var bootstrapKeyFile: String?

    @Option(help: "table or json") var output: OutputFormat = .table

    /// The gateway URL and the strongest credential configured: a token, then client credentials, then
    /// the bootstrap key.
    func resolve() throws -> (url: String, credential: AdminCredential) {
        let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
        guard let raw = adminURL ?? env.text("latchkey.admin.url") else {
            throw ValidationError("--admin-url or LATCHKEY_ADMIN_URL (the registration gateway's URL) is required")
        }
        let url: String
        do { url = try SettingsReader.baseURL(raw, name: "LATCHKEY_ADMIN_URL") } catch {
            throw ValidationError("\(error)")
        }
        if let token = try env.secretText("latchkey.admin.token") {
            return (url, .token(token))
        }
        if let clientID = env.text("latchkey.admin.client.id") {
            guard
                let secret = try Self.file(clientSecretFile, "--client-secret-file")
                    ?? env.secretText("latchkey.admin.client.secret")
            else {
                throw ValidationError(
                    "LATCHKEY_ADMIN_CLIENT_ID is set but no secret: set LATCHKEY_ADMIN_CLIENT_SECRET(_FILE) or --client-secret-file"
                )
            }
            guard let issuer = env.text("latchkey.admin.issuer") else {
                throw ValidationError(
                    "LATCHKEY_ADMIN_ISSUER (the admin client's issuer, e.g. https://token.example.com/t/platform) is required with LATCHKEY_ADMIN_CLIENT_ID"
                )
            }
            do {
                return (
                    url,
                    .client(
                        issuer: try SettingsReader.baseURL(issuer, name: "LATCHKEY_ADMIN_ISSUER"), clientID: clientID,
                        secret: secret)
                )
            } catch { throw ValidationError("\(error)") }
        }
        if let key = try Self.file(bootstrapKeyFile, "--bootstrap-key-file")
            ?? env.secretText("latchkey.bootstrap.key")
        {
            return (url, .bootstrapKey(key))
        }
        throw ValidationError(
            "no admin credential: set LATCHKEY_ADMIN_CLIENT_ID with LATCHKEY_ADMIN_CLIENT_SECRET(_FILE) and LATCHKEY_ADMIN_ISSUER, LATCHKEY_ADMIN_TOKEN(_FILE), or LATCHKEY_BOOTSTRAP_KEY(_FILE)"
        )
    }

    /// The trimmed content of the file at `path` (nil when no path is given); an unreadable or empty file is an error.
    static func file(_ path: String?, _ name: String) throws -> String? {
        guard let path else { return nil }
        guard let data = FileManager.default.contents(atPath: path),
            case let value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
            !value.isEmpty
        else { throw ValidationError("\(name): cannot read a value from \(path)") }
        return value
    }
}
