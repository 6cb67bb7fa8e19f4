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
        let claims = try await ResourceTokenAuthentication(lookup: lookup, dpop: dpop).authenticate(
            request, url: endpoints.userinfo, tenant: tenant, endpoints: endpoints)
        let logger = database.logger
        let info: UserInfo? = try await database.withTenantTransaction(tenant.id) { connection in
            guard let live = try await lookup.liveAccessToken(claims, on: connection, logger: logger),
                let userID = live.userID
            else { return nil }
            let rows = try await connection.query(
                "SELECT username, name, email, email_verified FROM users WHERE user_id = \(userID) AND status = 'active'",
                logger: logger)
            for try await (username, name, email, verified) in rows.decode((String, String?, String?, Bool).self) {
                let scopes = claims.scopes
                let showsEmail = scopes.contains("email") && email != nil
                return UserInfo(
                    sub: userID.uuidString.lowercased(),
                    preferredUsername: scopes.contains("profile") ? username : nil,
                    name: scopes.contains("profile") ? name : nil,
                    email: showsEmail ? email : nil,
                    emailVerified: showsEmail ? verified : nil)
            }
            return nil
        }
        guard let info else { throw Self.unauthorized("invalid_token", "access token is invalid") }
        guard claims.scopes.contains("openid") else {
            throw ResourceTokenAuthentication.insufficientScope("openid", "userinfo needs the openid scope")
        }
        return try JSONResponse.make(info)
    }

    static func unauthorized(_ code: String, _ description: String) -> OAuthError {
        ResourceTokenAuthentication.unauthorized(code, description)
    }
}

struct UserInfo: Encodable, Sendable {
    var sub: String
    var preferredUsername: String?
    /// The name an upstream provider gave when the account was created (with `profile`).
    var name: String?
    var email: String?
    /// OpenID Connect Core §5.1: true only when the address was verified (by the upstream provider that
    /// vouched for it, or the administrator who created the user); sent with `email`.
    var emailVerified: Bool?

    enum CodingKeys: String, CodingKey {
        case sub, name, email
        case preferredUsername = "preferred_username"
        case emailVerified = "email_verified"
    }
}
