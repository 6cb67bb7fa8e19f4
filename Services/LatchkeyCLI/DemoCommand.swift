import ArgumentParser
import Configuration
import Foundation
import LatchkeyServer

/// `latchkey demo seed|run`: seeds the demo tenant of the local platform and walks the mobile story.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Seed the demo tenant and walk the mobile story against a running platform (scripts/run.sh).",
        subcommands: [Seed.self, Run.self], defaultSubcommand: Run.self)

    /// Where the services listen.
    struct Options: ParsableArguments {
        @Option(help: "registration-gateway URL") var gateway = "http://127.0.0.1:8081"
        @Option(help: "token-service URL") var tokenService = "http://127.0.0.1:8082"
        @Option(help: "dpop-verifier (in front of the demo API) URL") var sidecar = "http://127.0.0.1:8083"
        @Option(help: "audit-consumer URL") var audit = "http://127.0.0.1:8084"
        @Option(help: "The demo tenant.") var tenant = "demo"
        @Option(help: "The credentials file `seed` writes and `run` reads.") var credentials =
            ".run/demo-credentials.json"

        var endpoints: DemoEndpoints {
            DemoEndpoints(gateway: gateway, tokenService: tokenService, sidecar: sidecar, audit: audit, tenant: tenant)
        }
    }

    struct Seed: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the demo tenant, admin client, DCR client, template and user.")
        @OptionGroup var options: Options
        @Option(help: "The gateway's ADMIN_BOOTSTRAP_KEY (default: $ADMIN_BOOTSTRAP_KEY).") var bootstrapKey: String?

        func run() async throws {
            let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
            guard let key = try bootstrapKey ?? env.secretText("admin.bootstrap.key") else {
                throw ValidationError("--bootstrap-key or ADMIN_BOOTSTRAP_KEY is required")
            }
            let http = DemoHTTP()
            do {
                let credentials = try await DemoSeeder(http: http, endpoints: options.endpoints, bootstrapKey: key)
                    .seed()
                let data = try JSONEncoder().encode(credentials)
                FileManager.default.createFile(
                    atPath: options.credentials, contents: data, attributes: [.posixPermissions: 0o600])
                print("demo tenant '\(options.tenant)' seeded; credentials in \(options.credentials)")
                try await http.shutdown()
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Walk the mobile story step by step, printing each exchange.")
        @OptionGroup var options: Options

        func run() async throws {
            let data = try Data(contentsOf: URL(fileURLWithPath: options.credentials))
            let credentials = try JSONDecoder().decode(DemoCredentials.self, from: data)
            let http = DemoHTTP()
            http.trace = { print("     \($0)") }
            let story = MobileStory(
                http: http, endpoints: options.endpoints, credentials: credentials, say: { print($0) })
            do {
                let outcome = try await story.run()
                print("\nDone: instance \(outcome.instanceID) registered, used, revoked and audited.")
                try await http.shutdown()
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }
}
