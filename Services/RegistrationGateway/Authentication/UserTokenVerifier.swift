import Foundation
import Shared

/// Verifies DCR access tokens (scope `dcr`, audience = the tenant's registration endpoint) against
/// the tenant's published keys, and admin tokens (scope `admin`).
struct UserTokenVerifier: Sendable {
    static let dcrScope = "dcr"
    static let adminScope = "admin"

    let settings: GatewaySettings
    let keys: TenantKeyCache

    /// The verified claims of a token of `tenant` carrying `scope` and addressed to `audience`.
    func verify(_ token: String, tenant: String, scope: String, audience: String) async throws -> AccessTokenClaims {
        let parsed: AccessTokenVerifier.Parsed
        do { parsed = try AccessTokenVerifier.parse(token) } catch { throw BearerToken.invalidToken(error.description) }
        // The issuer is checked before any key is loaded.
        guard parsed.claims.iss == settings.issuer(tenant: tenant) else {
            throw BearerToken.invalidToken(AccessTokenError.untrustedIssuer.description)
        }
        let keySet = try await keys.keys(tenant: tenant, kid: parsed.kid)
        let claims: AccessTokenClaims
        do {
            claims = try AccessTokenVerifier.check(parsed, keys: keySet.keys) { $0.contains(audience) }
        } catch { throw BearerToken.invalidToken(error.description) }
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
