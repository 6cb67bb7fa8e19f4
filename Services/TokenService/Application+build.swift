import Hummingbird
import Logging
import Shared

extension ServiceDescriptor {
    /// `token-service`, port 8082 by default.
    static let tokenService = ServiceDescriptor(name: "token-service", defaultPort: 8082, needsSystemDatabase: true)
}

/// Builds the token-service application; `Main` and the tests call this.
func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    return runtime.makeApplication(router: runtime.makeRouter(), services: try runtime.makeOutboxServices())
}
