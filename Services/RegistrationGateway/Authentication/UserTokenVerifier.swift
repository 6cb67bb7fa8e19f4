import Foundation
import Shared

/// Verifies DCR access tokens (scope `dcr`, audience = the tenant's registration endpoint) against
/// the tenant's published keys, and admin tokens (scope `admin`).
struct UserTokenVerifier: Sendable {
    static let dcrScope = "dcr"
    static let adminScope = "admin"

    let settings: GatewaySettings
    let keys: TenantKeyCache
    let verifier: AccessTokenVerifier

    /// The verified claims of a token of `tenant` carrying `scope` and addressed to `audience`.
    func verify(_ token: String, tenant: String, scope: String, audience: String) async throws -> AccessTokenClaims {
        let jws: CompactJWS
        do { jws = try verifier.parse(token) } catch { throw BearerToken.invalidToken(error.reason) }
        let keySet = try await keys.keys(tenant: tenant, kid: jws.header.kid)
        let claims: AccessTokenClaims
        do {
            claims = try verifier.verify(jws, keys: keySet, issuer: settings.issuer(tenant: tenant), audience: audience)
        } catch { throw BearerToken.invalidToken(error.reason) }
        guard claims.scopes.contains(scope) else {
            throw BearerToken.invalidToken("token lacks the \(scope) scope")
        }
        return claims
    }

    /// The user a DCR token speaks for.
    func verifyDCRToken(_ token: String, tenant: String) async throws -> UUID {
        let claims = try await verify(
            token, tenant: tenant, scope: Self.dcrScope, audience: settings.registrationEndpoint(tenant: tenant))
        guard let user = UUID(uuidString: claims.sub) else {
            throw BearerToken.invalidToken("token subject is not a user")
        }
        return user
    }
}
