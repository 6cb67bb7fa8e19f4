import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import PostgresNIO

/// `GET /t/{tenant}/userinfo` (OpenID Connect Core §5.3) with a Bearer or DPoP access token.
/// A DPoP-bound token presented as Bearer is refused (downgrade); DPoP needs a full proof incl. `ath`.
struct UserInfoController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let lookup: TokenLookup
    let dpop: TokenEndpointDPoP

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("userinfo") { request, context in try await userinfo(request: request, context: context) }
    }

    func userinfo(request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
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
                request: request, url: endpoints.userinfo, tenant: tenant, accessToken: token, expectedJKT: jkt)
        } else if scheme == "dpop" {
            throw Self.unauthorized("invalid_token", "token is not DPoP-bound")
        }
        let logger = database.logger
        let info: UserInfo? = try await database.withTenantTransaction(tenant.id) { connection in
            guard let live = try await lookup.liveAccessToken(claims, on: connection, logger: logger),
                let userID = live.userID
            else { return nil }
            let rows = try await connection.query(
                "SELECT username, email, email_verified FROM users WHERE user_id = \(userID) AND status = 'active'",
                logger: logger)
            for try await (username, email, verified) in rows.decode((String, String?, Bool).self) {
                let scopes = claims.scopes
                let showsEmail = scopes.contains("email") && email != nil
                return UserInfo(
                    sub: userID.uuidString.lowercased(),
                    preferredUsername: scopes.contains("profile") ? username : nil,
                    email: showsEmail ? email : nil,
                    emailVerified: showsEmail ? verified : nil)
            }
            return nil
        }
        guard let info else { throw Self.unauthorized("invalid_token", "access token is invalid") }
        guard claims.scopes.contains("openid") else {
            throw OAuthError(
                .forbidden, "insufficient_scope", "userinfo needs the openid scope",
                headers: [.wwwAuthenticate: "Bearer error=\"insufficient_scope\", scope=\"openid\""])
        }
        return try JSONResponse.make(info)
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

struct UserInfo: Encodable, Sendable {
    var sub: String
    var preferredUsername: String?
    var email: String?
    /// OpenID Connect Core §5.1: true only when the address was verified (by the upstream provider that
    /// vouched for it, or the administrator who created the user); sent with `email`.
    var emailVerified: Bool?

    enum CodingKeys: String, CodingKey {
        case sub, email
        case preferredUsername = "preferred_username"
        case emailVerified = "email_verified"
    }
}
