import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import PostgresNIO

/// The account API for apps: `GET /t/{tenant}/account/clients` lists the token's user's devices and
/// `POST /t/{tenant}/account/clients/{client_id}/revoke` signs the user out of one (`action=sign_out`, the
/// default) or, for the user who registered it, removes it (`action=remove`). Needs an access token with
/// scope `account` (DPoP-bound tokens with their proof), whose user is still active.
struct AccountAPIController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let lookup: TokenLookup
    let dpop: TokenEndpointDPoP
    let devices: AccountDevices

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("account/clients") { request, context in try await list(request, context) }
        group.post("account/clients/:client_id/revoke") { request, context in try await revoke(request, context) }
    }

    struct DeviceList: Encodable {
        var clients: [AccountDevices.Device]
    }

    struct Revoked: Encodable {
        var clientID: String
        var action: String
        var signedOut: AccountDevices.SignedOut?

        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case action
            case refreshTokens = "refresh_tokens_revoked"
            case accessTokens = "access_tokens_revoked"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(clientID, forKey: .clientID)
            try container.encode(action, forKey: .action)
            try container.encodeIfPresent(signedOut?.refreshTokens, forKey: .refreshTokens)
            try container.encodeIfPresent(signedOut?.accessTokens, forKey: .accessTokens)
        }
    }

    func list(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        let claims = try await authenticate(request, url: "\(endpoints.issuer)/account/clients", tenant: tenant)
        let logger = database.logger
        let listed = try await database.withTenantTransaction(tenant.id) { connection in
            let user = try await liveUser(claims, on: connection)
            return try await devices.list(user: user, on: connection, logger: logger)
        }
        return try JSONResponse.make(DeviceList(clients: listed))
    }

    func revoke(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        let url = "\(endpoints.issuer)/account/clients/\(AuthorizationResponseTarget.encode(clientID))/revoke"
        let claims = try await authenticate(request, url: url, tenant: tenant)
        // The body is optional: without a content type the default action applies.
        let form =
            request.headers[.contentType] == nil
            ? try FormParameters.parse("") : try await FormParameters.read(from: request)
        let action = form["action"] ?? "sign_out"
        guard action == "sign_out" || action == "remove" else {
            throw OAuthError.invalidRequest("action must be sign_out or remove")
        }
        let logger = database.logger
        let result = try await database.withTenantTransaction(tenant.id) { connection -> Revoked in
            let user = try await liveUser(claims, on: connection)
            guard let device = try await devices.find(clientID, user: user, on: connection, logger: logger) else {
                throw OAuthError.notFound("unknown client")
            }
            if action == "remove" {
                guard device.registeredByYou else {
                    throw OAuthError(
                        .forbidden, "access_denied", "only the user who registered this device can remove it")
                }
                guard
                    try await devices.remove(
                        user: user, clientID: clientID, tenant: tenant, on: connection, logger: logger)
                else { throw OAuthError(.conflict, "invalid_request", "the client is no longer active") }
                return Revoked(clientID: clientID, action: action, signedOut: nil)
            }
            let ended = try await devices.signOut(
                user: user, clientID: clientID, tenant: tenant.slug, on: connection, logger: logger)
            return Revoked(clientID: clientID, action: action, signedOut: ended)
        }
        return try JSONResponse.make(result)
    }

    private func authenticate(_ request: Request, url: String, tenant: ResolvedTenant) async throws
        -> AccessTokenClaims
    {
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        let claims = try await ResourceTokenAuthentication(lookup: lookup, dpop: dpop).authenticate(
            request, url: url, tenant: tenant, endpoints: endpoints)
        guard claims.scopes.contains(TenantPolicy.accountScope) else {
            throw ResourceTokenAuthentication.insufficientScope(
                TenantPolicy.accountScope, "the account API needs the account scope")
        }
        return claims
    }

    /// The token's user, when the token is live (not revoked, client active, user active).
    private func liveUser(_ claims: AccessTokenClaims, on connection: PostgresConnection) async throws -> UUID {
        guard let live = try await lookup.liveAccessToken(claims, on: connection, logger: database.logger),
            let user = live.userID
        else { throw ResourceTokenAuthentication.unauthorized("invalid_token", "access token is invalid") }
        return user
    }
}
