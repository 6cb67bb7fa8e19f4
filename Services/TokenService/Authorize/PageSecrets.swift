import Crypto
import Foundation
import Shared

/// Keys for the pages, derived from `SECRET_HASH_KEY` with distinct labels (HMAC as a KDF), so no
/// extra secret needs configuring and every replica derives the same keys.
struct PageSecrets: Sendable {
    let csrfKey: SymmetricKey
    let sealingKey: SymmetricKey
    /// Seals the upstream federation cookie (state, nonce, PKCE verifier).
    let federationKey: SymmetricKey

    init(hasher: KeyedHasher) {
        func derive(_ label: String) -> SymmetricKey {
            SymmetricKey(data: Base64URL.decodeBytes(Array(hasher.hash(label).utf8)) ?? [])
        }
        csrfKey = derive("latchkey/token-service/csrf/v1")
        sealingKey = derive("latchkey/token-service/pending-authorization/v1")
        federationKey = derive("latchkey/token-service/federation-cookie/v1")
    }
}

/// AES-GCM sealing of a Codable value with the tenant as associated data: the browser can carry it
/// but can neither read nor alter it, nor replay it at another tenant.
struct TenantBoundSealer: Sendable {
    let key: SymmetricKey

    func seal<T: Encodable>(_ value: T, tenant: String) throws -> String {
        let plain = try JSONEncoder().encode(value)
        let box = try AES.GCM.seal(plain, using: key, authenticating: Data(tenant.utf8))
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return Base64URL.encode(combined)
    }

    /// The value, or nil when `sealed` is malformed, forged or for another tenant.
    func open<T: Decodable>(_ type: T.Type, _ sealed: String?, tenant: String) -> T? {
        guard let sealed, sealed.utf8.count <= 8192, let bytes = Base64URL.decodeBytes(Array(sealed.utf8)),
            let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Data(tenant.utf8))
        else { return nil }
        return try? JSONDecoder().decode(T.self, from: plain)
    }
}

/// Seals a pending ``AuthorizationRequest`` so the pages can carry it in a form field or link.
struct PendingAuthorizationSealer: Sendable {
    let key: SymmetricKey

    func seal(_ request: AuthorizationRequest, tenant: String) throws -> String {
        try TenantBoundSealer(key: key).seal(request, tenant: tenant)
    }

    /// The request, or nil when the value is malformed, forged, for another tenant or expired.
    func open(_ sealed: String?, tenant: String) -> AuthorizationRequest? {
        guard let request = TenantBoundSealer(key: key).open(AuthorizationRequest.self, sealed, tenant: tenant),
            request.expiresAt > Date()
        else { return nil }
        return request
    }
}

/// Double-submit CSRF protection: a random cookie, and a form token that is an HMAC of it (bound to
/// the tenant), so an attacker who cannot read or set the cookie cannot forge the token.
struct CSRFGuard: Sendable {
    static let cookieName = "latchkey_csrf"
    let key: SymmetricKey

    func token(for cookieValue: String, tenant: String) -> String {
        Base64URL.encode(HMAC<SHA256>.authenticationCode(for: Data("\(tenant)\n\(cookieValue)".utf8), using: key))
    }

    /// The cookie value to use for this request: the browser's own if well-formed, else a new one.
    func cookieValue(from request: String?) -> (value: String, isNew: Bool) {
        if let request, Self.isWellFormed(request) { return (request, false) }
        return (SecretTokens.generate(), true)
    }

    func isValid(cookie: String?, token: String?, tenant: String) -> Bool {
        guard let cookie, Self.isWellFormed(cookie), let token else { return false }
        return ConstantTime.equals(self.token(for: cookie, tenant: tenant), token)
    }

    static func isWellFormed(_ value: String) -> Bool {
        value.utf8.count == 43 && Base64URL.decodeBytes(Array(value.utf8))?.count == 32
    }
}
