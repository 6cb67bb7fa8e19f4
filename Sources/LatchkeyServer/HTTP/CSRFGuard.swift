import Crypto
import Foundation
import LatchkeyCore

/// CSRF tokens as an HMAC of a browser-held secret (a double-submit cookie, or the admin session id),
/// bound to the tenant: an attacker who can neither read nor set that secret cannot forge the token.
public struct CSRFGuard: Sendable {
    /// The token service's double-submit cookie.
    public static let cookieName = "latchkey_csrf"
    public let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    public func token(for cookieValue: String, tenant: String) -> String {
        Base64URL.encode(HMAC<SHA256>.authenticationCode(for: Data("\(tenant)\n\(cookieValue)".utf8), using: key))
    }

    /// The cookie value to use for this request: the browser's own if well-formed, else a new one.
    public func cookieValue(from request: String?) -> (value: String, isNew: Bool) {
        if let request, Self.isWellFormed(request) { return (request, false) }
        return (SecretTokens.generate(), true)
    }

    /// Whether `token` is the one for `cookie`, compared in constant time.
    public func isValid(cookie: String?, token: String?, tenant: String) -> Bool {
        guard let cookie, Self.isWellFormed(cookie), let token else { return false }
        return ConstantTime.equals(self.token(for: cookie, tenant: tenant), token)
    }

    /// A value ``SecretTokens/generate(prefix:byteCount:)`` could have made (43 base64url characters, 32 bytes).
    public static func isWellFormed(_ value: String) -> Bool {
        value.utf8.count == 43 && Base64URL.decodeBytes(Array(value.utf8))?.count == 32
    }
}
