import Hummingbird
import Logging
import Shared

extension ServiceDescriptor {
    /// `registration-gateway`, port 8081 by default.
    static let registrationGateway = ServiceDescriptor(name: "registration-gateway", defaultPort: 8081, needsSystemDatabase: true)
}

/// Builds the registration-gateway application; `Main` and the tests call this.
func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    return runtime.makeApplication(router: runtime.makeRouter(), services: try runtime.makeOutboxServices())
}
