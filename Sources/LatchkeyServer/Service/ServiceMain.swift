import Configuration
import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO
import ServiceLifecycle
import UnixSignals

/// The thin `@main` every service shares: `serve` (default) or `migrate`.
public enum ServiceMain {
    /// Runs the service `descriptor` names; `build` makes its application from the settings read from the environment.
    public static func run<App: ApplicationProtocol>(
        _ descriptor: ServiceDescriptor,
        build: @escaping @Sendable (ServiceSettings, Logger) async throws -> App
    ) async {
        let name = descriptor.name
        LatchkeyMetrics.bootstrap()
        let reader = ConfigReader(providers: [EnvironmentVariablesProvider()])
        // A bad LOG_FORMAT or LOG_LEVEL is reported by the settings below; until then the defaults apply.
        ((try? ServiceSettings.logFormat(SettingsReader(reader))) ?? .text).bootstrap(service: name)
        var logger = Logger(label: name)
        logger.logLevel = (try? ServiceSettings.logLevel(SettingsReader(reader))) ?? .info
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch arguments.first {
            case nil, "serve":
                var settings = try ServiceSettings(reader: reader, descriptor: descriptor)
                settings.ownsProcess = true
                let env = SettingsReader(reader)
                settings.traceExport = try DistributedTracing.bootstrap(
                    service: name, exporter: DistributedTracing.exporter(env),
                    headers: DistributedTracing.exportHeaders(env), logger: logger)
                let app = try await build(settings, logger)
                // A group around the application whose last service is the deadline: a signal reaches the
                // deadline first. Inside the application the HTTP server stops first, waiting for requests
                // in flight, and one blocked on an unanswering dependency would otherwise keep the deadline
                // from ever starting.
                let group = ServiceGroup(
                    configuration: .init(
                        services: [app, ShutdownDeadline(grace: settings.shutdownGrace, logger: logger)],
                        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
                try await group.run()
                // Threads a library started (librdkafka's among them) must not keep the process alive.
                terminateProcess(status: 0)
            case "migrate" where descriptor.needsDatabase:
                try await migrate(reader: reader, logger: logger)
            case "-h", "--help", "help":
                print(
                    descriptor.needsDatabase
                        ? "usage: \(name) [serve|migrate]\n  serve    run the service (default)\n  migrate  apply database migrations (DATABASE_MIGRATION_URL, else DATABASE_URL)"
                        : "usage: \(name) [serve]\n  serve    run the service (default)")
            default:
                throw ConfigurationError("unknown command \(arguments[0]); try --help")
            }
        } catch {
            logger.critical("\(name) stopped", metadata: ["error": "\(error.logDescription)"])
            terminateProcess(status: 1)
        }
    }

    /// Applies pending migrations with the owner role and exits.
    public static func migrate(reader: ConfigReader, logger: Logger) async throws {
        let env = SettingsReader(reader)
        guard let url = try env.secretText("database.migration.url") ?? env.secretText("database.url")
        else { throw ConfigurationError("DATABASE_MIGRATION_URL (or DATABASE_URL) is required to migrate") }
        let configuration = try DatabaseConfiguration(url: url).onDemand
        let client = configuration.makeClient(logger: logger)
        try await withRunningPool(client) {
            let applied = try await Migrator(logger: logger).migrate(client: client)
            logger.info("migrations done", metadata: ["applied": "\(applied)"])
        }
    }
}
