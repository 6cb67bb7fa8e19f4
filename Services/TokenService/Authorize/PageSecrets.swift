import Crypto
import Foundation
import LatchkeyCore

/// Keys for the pages, derived from `SECRET_HASH_KEY` with distinct labels (``KeyedHasher/deriveKey(_:)``).
struct PageSecrets: Sendable {
    let csrfKey: SymmetricKey
    let sealingKey: SymmetricKey
    /// Seals the upstream federation cookie (state, nonce, PKCE verifier).
    let federationKey: SymmetricKey
    /// Seals a `form_post` authorization response on its way from the cross-site POST to our own GET.
    let formPostKey: SymmetricKey

    init(hasher: KeyedHasher) {
        csrfKey = hasher.deriveKey("latchkey/token-service/csrf/v1")
        sealingKey = hasher.deriveKey("latchkey/token-service/pending-authorization/v1")
        federationKey = hasher.deriveKey("latchkey/token-service/federation-cookie/v1")
        formPostKey = hasher.deriveKey("latchkey/token-service/federation-form-post/v1")
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
