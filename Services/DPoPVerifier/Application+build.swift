import Configuration
import Hummingbird
import Logging
import Shared

/// Builds the dpop-verifier application from configuration; tests call this too.
func buildApplication(reader: ConfigReader, logger: Logger) async throws -> some ApplicationProtocol {
    let settings = try ServiceSettings(
        reader: reader, serviceName: "dpop-verifier", defaultPort: 8083, needsSystemDatabase: false)
    return try buildApplication(settings: settings, logger: logger)
}

func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let router = runtime.makeRouter()
    return runtime.makeApplication(router: router)
}
