import Foundation

/// CloudEvents `source` values of the Latchkey services.
public enum EventSource {
    public static let registrationGateway = "/latchkey/registration-gateway"
    public static let tokenService = "/latchkey/token-service"
    public static let dpopVerifier = "/latchkey/dpop-verifier"
    public static let auditConsumer = "/latchkey/audit-consumer"
}
