import Hummingbird
import Logging
import Shared

extension ServiceDescriptor {
    /// `audit-consumer`, port 8084 by default.
    static let auditConsumer = ServiceDescriptor(name: "audit-consumer", defaultPort: 8084, needsSystemDatabase: true)
}

/// Builds the audit-consumer application; `Main` and the tests call this.
func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    return runtime.makeApplication(router: runtime.makeRouter())
}
