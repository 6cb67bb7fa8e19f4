import Configuration
import Hummingbird
import Logging
import Shared

/// Builds the registration-gateway application from configuration; tests call this too.
func buildApplication(reader: ConfigReader, logger: Logger) async throws -> some ApplicationProtocol {
    let settings = try ServiceSettings(
        reader: reader, serviceName: "registration-gateway", defaultPort: 8081, needsSystemDatabase: true)
    return try buildApplication(settings: settings, logger: logger)
}

func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let outbox = try runtime.makeOutboxServices()
    let router = runtime.makeRouter()
    return runtime.makeApplication(router: router, services: outbox)
}
