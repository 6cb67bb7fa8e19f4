import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// `POST /t/{tenant}/token`: client authentication, DPoP, then one of the three grants.
struct TokenController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let keyStore: TenantKeyStore
    let authentication: TokenEndpointAuthentication
    let dpop: TokenEndpointDPoP
    let issuer: TokenIssuer
    let revocation: TokenRevocation

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.post("token") { request, context in try await token(request: request, context: context) }
    }

    func token(request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        let form = try await FormParameters.read(from: request)
        guard let grantName = form["grant_type"] else { throw OAuthError.invalidRequest("grant_type is required") }
        guard let grant = GrantType(rawValue: grantName), grant.isSupported else {
            throw OAuthError(.badRequest, "unsupported_grant_type", "grant type is not supported")
        }
        let client = try await authentication.authenticate(request: request, form: form, endpoints: endpoints)
        guard client.grantTypes.contains(grant), client.isStatic || tenant.policy.allowedGrantTypes.contains(grant)
        else {
            throw OAuthError(.badRequest, "unauthorized_client", "the client may not use this grant type")
        }
        let mustUseDPoP = tenant.policy.dpop.isRequired(clientRequestsBinding: client.metadata.dpopBoundAccessTokens)
        let proof = try await dpop.verify(request: request, url: endpoints.token, tenant: tenant, required: mustUseDPoP)
        let grantContext = GrantContext(
            tenant: tenant, endpoints: endpoints, client: client, form: form, proof: proof,
            sourceAddress: context.remoteAddress?.ipAddress)
        let signer = try await keyStore.signingKey(for: tenant)
        let response: TokenResponse
        switch grant {
        case .clientCredentials:
            response = try await ClientCredentialsGrant(issuer: issuer, database: database)
                .grant(grantContext, signer: signer)
        case .authorizationCode:
            response = try await AuthorizationCodeGrant(
                issuer: issuer, revocation: revocation, database: database, dpop: dpop
            )
            .grant(grantContext, signer: signer)
        case .refreshToken:
            response = try await RefreshTokenGrant(
                issuer: issuer, revocation: revocation, database: database, dpop: dpop
            )
            .grant(grantContext, signer: signer)
        case .implicit:
            throw OAuthError(.badRequest, "unsupported_grant_type", "grant type is not supported")
        }
        BusinessMetrics.tokenIssued(tenant: tenant.slug.rawValue, grantType: grant.rawValue)
        return try JSONResponse.make(response, extraHeaders: dpop.responseHeaders(tenant: tenant))
    }
}

/// Everything a grant needs about the request that reached the token endpoint.
struct GrantContext: Sendable {
    let tenant: ResolvedTenant
    let endpoints: TenantEndpoints
    let client: StoredClient
    let form: FormParameters
    let proof: DPoPVerifiedProof?
    let sourceAddress: String?

    /// The refresh token binding: public clients' refresh tokens are bound to the DPoP key that got them.
    var refreshBinding: String? { client.clientType == .public ? proof?.jkt : nil }
}

/// RFC 6749 §5.2 errors the grants share.
extension OAuthError {
    static func invalidGrant(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_grant", description)
    }
    static func invalidScope(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_scope", description)
    }
}
