import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// Verifies DCR access tokens (scope `dcr`, audience = the tenant's registration endpoint) against
/// the tenant's published keys.
struct UserTokenVerifier: Sendable {
    static let dcrScope = "dcr"

    static let dpopHeader = HTTPField.Name("DPoP")!

    let settings: GatewaySettings
    /// The tenants' verification keys (the same read path as admin tokens).
    let keys: TenantSigningKeyStore
    /// Proofs for DPoP-bound DCR tokens: `iat` window and `jti` replay per key, no nonce.
    let proofs: DPoPProofVerifier

    /// The verified claims of a token of `tenant` carrying `scope` and addressed to `audience`.
    func verify(_ token: String, tenant: String, scope: String, audience: String) async throws -> AccessTokenClaims {
        let parsed: AccessTokenVerifier.Parsed
        do { parsed = try AccessTokenVerifier.parse(token) } catch { throw BearerToken.invalidToken(error.description) }
        // The issuer is checked before any key is loaded.
        guard parsed.claims.iss == settings.issuer(tenant: tenant), let slug = TenantSlug(rawValue: tenant) else {
            throw BearerToken.invalidToken(AccessTokenError.untrustedIssuer.description)
        }
        let key: TenantSigningKeyStore.PublicKey?
        do {
            key = try await keys.verificationKey(tenant: slug, kid: parsed.kid, at: Date())
        } catch let error as JOSEError {
            throw BearerToken.invalidToken("the tenant's signing key is unusable: \(error.reason)")
        }
        let claims: AccessTokenClaims
        do {
            claims = try AccessTokenVerifier.check(parsed, keys: key.map { [$0.jwk] } ?? []) { $0.contains(audience) }
        } catch { throw BearerToken.invalidToken(error.description) }
        guard claims.scopes.contains(scope) else {
            throw BearerToken.invalidToken("token lacks the \(scope) scope")
        }
        return claims
    }

    /// Who a DCR token speaks for, and the app instance the request proved to be.
    struct DCRSubject: Sendable, Hashable {
        var user: UUID
        /// The RFC 7638 thumbprint of the key a DPoP proof of this request was signed with: the key of the
        /// app instance registering. Never taken from metadata (`jwks`) a request merely sends.
        var instanceJKT: String?
    }

    /// The user a DCR token speaks for. A DPoP-bound token (`cnf.jkt`) counts only with the DPoP scheme and
    /// a proof of its key for this request (`ath`, `htm`, `htu` from the configured public URL): a bound token
    /// presented as Bearer is a downgrade, and an unbound one presented as DPoP is refused too. An unbound
    /// Bearer token may come with a DPoP proof (its `ath` naming the token) to identify the app instance.
    func verifyDCRToken(_ credential: BearerToken.Credential, request: Request, tenant: String) async throws
        -> DCRSubject
    {
        let endpoint = settings.registrationEndpoint(tenant: tenant)
        let claims = try await verify(credential.token, tenant: tenant, scope: Self.dcrScope, audience: endpoint)
        let proofHeaders = request.headers[values: Self.dpopHeader]
        var instance: String?
        if let jkt = claims.cnf?.jkt {
            guard credential.isDPoP else {
                throw BearerToken.invalidToken("a DPoP-bound token must be presented with the DPoP scheme and a proof")
            }
            instance = try await verifyProof(
                proofHeaders, request: request, endpoint: endpoint, token: credential.token, jkt: jkt)
        } else if credential.isDPoP {
            throw BearerToken.invalidToken("the token is not DPoP-bound")
        } else if !proofHeaders.isEmpty {
            instance = try await verifyProof(
                proofHeaders, request: request, endpoint: endpoint, token: credential.token, jkt: nil)
        }
        guard let user = UUID(uuidString: claims.sub) else {
            throw BearerToken.invalidToken("token subject is not a user")
        }
        return DCRSubject(user: user, instanceJKT: instance)
    }

    /// The thumbprint of the key that signed the request's proof; a bad proof is 401 `invalid_dpop_proof`.
    private func verifyProof(_ values: [String], request: Request, endpoint: String, token: String, jkt: String?)
        async throws -> String
    {
        do throws(DPoPError) {
            return try await proofs.verify(
                headerValues: values, method: request.method.rawValue, url: endpoint, accessToken: token,
                expectedJKT: jkt
            ).jkt
        } catch {
            throw OAuthError(
                .unauthorized, error.errorCode, error.reason,
                headers: [
                    .wwwAuthenticate:
                        "DPoP error=\"\(error.errorCode)\", algs=\"\(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: " "))\""
                ])
        }
    }
}
