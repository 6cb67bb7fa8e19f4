import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// The access token of a request to one of the token service's own resources (userinfo, the account
/// API): exactly one `Authorization` header, `Bearer` or `DPoP`, a token of this tenant for its default
/// audience; a DPoP-bound token needs its full proof (incl. `ath`) and is refused as Bearer (downgrade).
struct ResourceTokenAuthentication: Sendable {
    let lookup: TokenLookup
    let dpop: TokenEndpointDPoP

    /// The verified claims (signature, issuer, audience, expiry, DPoP); the caller checks the stored
    /// record with ``TokenLookup/liveAccessToken(_:on:logger:)``.
    func authenticate(_ request: Request, url: String, tenant: ResolvedTenant, endpoints: TenantEndpoints)
        async throws -> AccessTokenClaims
    {
        let authorizations = request.headers[values: .authorization]
        // RFC 6750 §3.1: two credentials make a malformed request (400), a missing one an unauthenticated one.
        guard authorizations.count <= 1 else {
            throw Self.challenge(.badRequest, "invalid_request", "exactly one Authorization header is allowed")
        }
        guard let header = authorizations.first else {
            // RFC 6750 §3.1: no error code in the challenge when no credentials were sent.
            throw OAuthError(
                .unauthorized, "invalid_token", "an access token is required",
                headers: [
                    .wwwAuthenticate:
                        "Bearer, DPoP algs=\"\(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: " "))\""
                ])
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { throw Self.unauthorized("invalid_token", "malformed Authorization header") }
        let scheme = parts[0].lowercased()
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        guard scheme == "bearer" || scheme == "dpop" else {
            throw Self.unauthorized("invalid_token", "unsupported scheme")
        }
        guard let claims = try await lookup.accessTokenClaims(token, endpoints: endpoints),
            claims.aud.contains(endpoints.defaultAudience)
        else { throw Self.unauthorized("invalid_token", "access token is invalid") }
        if let jkt = claims.cnf?.jkt {
            guard scheme == "dpop" else {
                throw Self.unauthorized("invalid_token", "DPoP-bound token presented as Bearer")
            }
            _ = try await dpop.verifyResource(
                request: request, url: url, tenant: tenant, accessToken: token, expectedJKT: jkt)
        } else if scheme == "dpop" {
            throw Self.unauthorized("invalid_token", "token is not DPoP-bound")
        }
        return claims
    }

    /// 403 `insufficient_scope` naming the scope the resource needs.
    static func insufficientScope(_ scope: String, _ description: String) -> OAuthError {
        OAuthError(
            .forbidden, "insufficient_scope", description,
            headers: [.wwwAuthenticate: "Bearer error=\"insufficient_scope\", scope=\"\(scope)\""])
    }

    static func unauthorized(_ code: String, _ description: String) -> OAuthError {
        challenge(.unauthorized, code, description)
    }

    static func challenge(_ status: HTTPResponse.Status, _ code: String, _ description: String) -> OAuthError {
        OAuthError(
            status, code, description,
            headers: [
                .wwwAuthenticate:
                    "Bearer error=\"\(code)\", DPoP algs=\"\(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: " "))\""
            ])
    }
}
