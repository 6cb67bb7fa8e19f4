import Hummingbird
import Logging
import Shared

extension ServiceDescriptor {
    /// `dpop-verifier`, port 8083 by default.
    static let dpopVerifier = ServiceDescriptor(name: "dpop-verifier", defaultPort: 8083, needsSystemDatabase: false)
}

/// Builds the dpop-verifier application; `Main` and the tests call this.
func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    return runtime.makeApplication(router: runtime.makeRouter())
}
