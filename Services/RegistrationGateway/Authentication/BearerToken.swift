import Foundation
import Hummingbird
import LatchkeyServer

/// The `Authorization: Bearer` credential of a request (RFC 6750 §2.1), and the 401s that refuse it.
enum BearerToken {
    /// Longest token accepted; anything longer is refused before any parsing or hashing.
    static let maximumLength = 16 * 1024

    /// An access token and the scheme it came with (RFC 6750 `Bearer` or RFC 9449 `DPoP`).
    struct Credential: Sendable {
        var token: String
        var isDPoP: Bool
    }

    /// The token, nil when no Authorization header was sent; a malformed header is a 401, two headers a 400.
    static func extract(from request: Request) throws -> String? {
        guard let credential = try credential(from: request, acceptingDPoP: false) else { return nil }
        return credential.token
    }

    /// The token with its scheme; `DPoP` is accepted only where the endpoint verifies proofs.
    static func credential(from request: Request, acceptingDPoP: Bool) throws -> Credential? {
        let values = request.headers[values: .authorization]
        guard !values.isEmpty else { return nil }
        guard values.count == 1 else { throw invalidRequest("exactly one Authorization header is allowed") }
        let value = values[0]
        guard value.utf8.count <= maximumLength + 7 else { throw invalidToken("token is too long") }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        let scheme = parts.first?.lowercased()
        guard parts.count == 2, scheme == "bearer" || (acceptingDPoP && scheme == "dpop") else {
            throw invalidToken(
                acceptingDPoP
                    ? "Authorization must use the Bearer or DPoP scheme" : "Authorization must use the Bearer scheme")
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        // RFC 6750 b64token characters only: rules out header injection and unicode look-alikes.
        guard !token.isEmpty, token.utf8.allSatisfy(isB64TokenByte) else {
            throw invalidToken("malformed bearer token")
        }
        return Credential(token: token, isDPoP: scheme == "dpop")
    }

    /// 401 `invalid_token` with an RFC 6750 §3 challenge. The description never echoes the token.
    static func invalidToken(_ description: String) -> OAuthError {
        let escaped = description.replacingOccurrences(of: "\\", with: "").replacingOccurrences(of: "\"", with: "'")
        return OAuthError(
            .unauthorized, "invalid_token", description,
            headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\", error_description=\"\(escaped)\""])
    }

    /// 400 `invalid_request` (RFC 6750 §3.1): the request itself is malformed, e.g. it carries two credentials.
    static func invalidRequest(_ description: String) -> OAuthError {
        OAuthError(
            .badRequest, "invalid_request", description,
            headers: [.wwwAuthenticate: "Bearer error=\"invalid_request\", error_description=\"\(description)\""])
    }

    private static func isB64TokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
            UInt8(ascii: "/"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}
