import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import PostgresNIO

/// `POST /t/{tenant}/introspect` (RFC 7662) for confidential clients: inactive for revoked tokens,
/// revoked families, expired tokens and tokens of clients that are no longer active.
struct IntrospectionController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let authentication: TokenEndpointAuthentication
    let lookup: TokenLookup

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.post("introspect") { request, context in try await introspect(request: request, context: context) }
    }

    func introspect(request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        let form = try await FormParameters.read(from: request)
        guard let token = form["token"] else { throw OAuthError.invalidRequest("token is required") }
        let caller = try await authentication.authenticate(request: request, form: form, endpoints: endpoints)
        guard caller.clientType == .confidential else {
            throw TokenEndpointAuthentication.invalidClient(tenant: tenant.id)
        }
        let claims = try await lookup.accessTokenClaims(token, endpoints: endpoints)
        // RFC 7662 §2.2: a client learns about other clients' tokens only when an administrator gave it the
        // `introspect` capability; for anyone else such a token is simply inactive.
        let mayIntrospectOthers = caller.registeredScopes.contains(TenantPolicy.introspectionScope)
        let logger = database.logger
        let answer: IntrospectionResponse = try await database.withTenantTransaction(tenant.id) { connection in
            if let claims {
                guard mayIntrospectOthers || claims.clientID == caller.clientID else { return .inactive }
                guard try await lookup.liveAccessToken(claims, on: connection, logger: logger) != nil else {
                    return .inactive
                }
                return IntrospectionResponse(
                    active: true, scope: claims.scope, clientID: claims.clientID, sub: claims.sub,
                    aud: claims.aud.values,
                    iss: claims.iss, exp: claims.exp, iat: claims.iat, jti: claims.jti,
                    tokenType: claims.cnf == nil ? "Bearer" : "DPoP", cnf: claims.cnf)
            }
            guard let stored = try await lookup.refreshToken(token, on: connection, logger: logger), stored.isActive,
                mayIntrospectOthers || stored.clientID == caller.clientID,
                try await ClientRepository.isActive(stored.clientID, on: connection, logger: logger)
            else { return .inactive }
            if let userID = stored.userID, try await !UserStatus.isActive(userID, on: connection, logger: logger) {
                return .inactive
            }
            return IntrospectionResponse(
                active: true, scope: stored.scope, clientID: stored.clientID,
                sub: stored.userID?.uuidString.lowercased(), iss: endpoints.issuer,
                exp: Int64(stored.expiresAt.timeIntervalSince1970), iat: Int64(stored.createdAt.timeIntervalSince1970),
                tokenType: "refresh_token")
        }
        return try JSONResponse.make(answer)
    }
}

/// RFC 7662 §2.2 response; an inactive token reveals nothing but `active: false`.
struct IntrospectionResponse: Encodable, Sendable {
    var active: Bool
    var scope: String?
    var clientID: String?
    var sub: String?
    var aud: [String]?
    var iss: String?
    var exp: Int64?
    var iat: Int64?
    var jti: String?
    var tokenType: String?
    var cnf: AccessTokenClaims.Confirmation?

    static let inactive = IntrospectionResponse(active: false)

    enum CodingKeys: String, CodingKey {
        case active, scope, sub, aud, iss, exp, iat, jti, cnf
        case clientID = "client_id"
        case tokenType = "token_type"
    }
}
