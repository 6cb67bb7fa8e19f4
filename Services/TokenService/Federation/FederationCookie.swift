import Foundation
import Hummingbird

/// What the browser carries between `/auth/{provider}` and its callback, AES-GCM-sealed in a cookie
/// (OAuth state and PKCE in an encrypted cookie, so no server-side state).
struct FederationState: Codable, Sendable {
    var state: String
    var nonce: String
    var verifier: String
    var provider: String
    var pending: AuthorizationRequest
    var expiresAt: Date

    /// Ten minutes to sign in at the provider.
    static let lifetime = 600

    enum CodingKeys: String, CodingKey {
        case state, nonce, verifier, provider, pending
        case expiresAt = "exp"
    }
}

/// Seals and opens the `latchkey_federation` cookie, scoped to `/t/{tenant}/auth`.
struct FederationCookie: Sendable {
    static let name = "latchkey_federation"
    let sealer: TenantBoundSealer
    let secure: Bool

    func cookie(_ state: FederationState, tenant: String) throws -> Cookie {
        Cookie(
            name: Self.name, value: try sealer.seal(state, tenant: tenant), maxAge: FederationState.lifetime,
            path: "/t/\(tenant)/auth", secure: secure, httpOnly: true, sameSite: .lax)
    }

    /// Deletes the cookie (it is single-use).
    func clearing(tenant: String) -> Cookie {
        Cookie(
            name: Self.name, value: "", maxAge: 0, path: "/t/\(tenant)/auth", secure: secure, httpOnly: true,
            sameSite: .lax)
    }

    /// The state, or nil when the cookie is missing, tampered with, for another tenant or expired.
    func open(_ value: String?, tenant: String, now: Date = Date()) -> FederationState? {
        guard let state = sealer.open(FederationState.self, value, tenant: tenant), state.expiresAt > now else {
            return nil
        }
        return state
    }
}
