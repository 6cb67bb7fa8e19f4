import Foundation
import Hummingbird
import LatchkeyCore

/// A password the tenant's policy refuses, answered as 400
/// `{"error": "invalid_password", "error_description": …, "violations": ["too_short", …]}`.
public struct PasswordRejection: HTTPResponseError, Sendable, CustomStringConvertible {
    public let error: PasswordPolicyError

    public init(_ error: PasswordPolicyError) {
        self.error = error
    }

    public var status: HTTPResponse.Status { .badRequest }
    public var description: String { "400 \(PasswordPolicyError.errorCode): \(error.violations.map(\.rawValue))" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Body(
            error: PasswordPolicyError.errorCode, errorDescription: error.description, violations: error.violations)
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(body))))
    }

    private struct Body: Encodable {
        var error: String
        var errorDescription: String
        var violations: [PasswordViolation]

        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
            case violations
        }
    }
}

extension PasswordPolicy {
    /// ``check(_:username:)`` with its refusal as a ``PasswordRejection``.
    public func require(_ password: String, username: String?) throws(PasswordRejection) {
        do { try check(password, username: username) } catch { throw PasswordRejection(error) }
    }
}
