import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import PostgresNIO

/// `POST /t/{tenant}/revoke` (RFC 7009): refresh tokens revoke their family; unknown tokens are 200.
struct RevocationController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let authentication: TokenEndpointAuthentication
    let lookup: TokenLookup
    let revocation: TokenRevocation

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.post("revoke") { request, context in try await revoke(request: request, context: context) }
    }

    func revoke(request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        let form = try await FormParameters.read(from: request)
        guard let token = form["token"] else { throw OAuthError.invalidRequest("token is required") }
        let client = try await authentication.authenticate(request: request, form: form, endpoints: endpoints)
        let actor = EventActor.client(client.clientID)
        let claims = try await lookup.accessTokenClaims(token, endpoints: endpoints)
        let logger = database.logger
        try await database.withTenantTransaction(tenant.id) { connection in
            if let claims {
                // Only the client the token was issued to may revoke it (RFC 7009 §2.1); others get the same 200.
                guard claims.clientID == client.clientID else { return }
                try await revocation.revokeAccessToken(
                    jti: claims.jti, tenant: tenant, clientID: client.clientID, userID: UUID(uuidString: claims.sub),
                    reason: .revocationRequest, actor: actor, on: connection, logger: logger)
            } else if let stored = try await lookup.refreshToken(token, on: connection, logger: logger),
                stored.clientID == client.clientID, stored.status != "revoked"
            {
                try await revocation.revokeFamily(
                    stored.familyID, tenant: tenant, clientID: client.clientID, userID: stored.userID,
                    reason: .revocationRequest, actor: actor, on: connection, logger: logger)
            }
        }
        return Response(status: .ok, headers: [.cacheControl: "no-store", .pragma: "no-cache"])
    }
}
