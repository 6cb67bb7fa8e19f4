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
        // Every grant re-checks the client in its own statement, so it may authenticate from the cache.
        var client = try await authentication.authenticate(
            request: request, form: form, endpoints: endpoints, cached: true)
        if client.fromCache, (try? permit(grant, to: client, tenant: tenant)) == nil {
            client = try await decideAgain(client, request: request, form: form, endpoints: endpoints)
        }
        try permit(grant, to: client, tenant: tenant)
        let proof = try await dpop.verify(
            request: request, url: endpoints.token, tenant: tenant,
            required: mustUseDPoP(client, tenant: tenant))
        let grantContext = GrantContext(
            tenant: tenant, endpoints: endpoints, client: client, form: form, proof: proof,
            sourceAddress: context.remoteAddress?.ipAddress)
        let signer = try await keyStore.signingKey(for: tenant)
        let response: TokenResponse
        do {
            response = try await issue(grant, grantContext, signer: signer)
        } catch let refusal where refusal is ClientNoLongerUsable || (client.fromCache && refusal is OAuthError) {
            // Revoked, expired or changed since its record was read, or refused on a cached record that may be
            // stale: the database's record decides, with every check of this request made again against it (the
            // DPoP proof, already used up, is not checked twice).
            let current = try await decideAgain(client, request: request, form: form, endpoints: endpoints)
            try permit(grant, to: current, tenant: tenant)
            if proof == nil, mustUseDPoP(current, tenant: tenant) {
                throw dpop.error(.invalidProof("a DPoP proof is required"), tenant: tenant)
            }
            let retry = GrantContext(
                tenant: tenant, endpoints: endpoints, client: current, form: form, proof: proof,
                sourceAddress: grantContext.sourceAddress)
            do {
                response = try await issue(grant, retry, signer: signer)
            } catch is ClientNoLongerUsable {
                throw TokenEndpointAuthentication.invalidClient(tenant: tenant.id)
            }
        }
        BusinessMetrics.tokenIssued(tenant: tenant.slug.rawValue, grantType: grant.rawValue)
        return try JSONResponse.make(response, extraHeaders: dpop.responseHeaders(tenant: tenant))
    }

    private func issue(_ grant: GrantType, _ context: GrantContext, signer: (kid: String, key: SigningKey))
        async throws -> TokenResponse
    {
        switch grant {
        case .clientCredentials:
            try await ClientCredentialsGrant(issuer: issuer, database: database).grant(context, signer: signer)
        case .authorizationCode:
            try await AuthorizationCodeGrant(issuer: issuer, revocation: revocation, database: database, dpop: dpop)
                .grant(context, signer: signer)
        case .refreshToken:
            try await RefreshTokenGrant(issuer: issuer, revocation: revocation, database: database, dpop: dpop)
                .grant(context, signer: signer)
        case .implicit:
            throw OAuthError(.badRequest, "unsupported_grant_type", "grant type is not supported")
        }
    }

    /// The client authenticated again against the database's record, after dropping the cached one.
    private func decideAgain(
        _ client: StoredClient, request: Request, form: FormParameters, endpoints: TenantEndpoints
    ) async throws -> StoredClient {
        authentication.cache.invalidate(tenant: endpoints.tenant, clientID: client.clientID)
        return try await authentication.authenticate(request: request, form: form, endpoints: endpoints)
    }

    /// `unauthorized_client` unless the client (and, for dynamic clients, the tenant) allows the grant type.
    private func permit(_ grant: GrantType, to client: StoredClient, tenant: ResolvedTenant) throws {
        guard client.grantTypes.contains(grant), client.isStatic || tenant.policy.allowedGrantTypes.contains(grant)
        else {
            throw OAuthError(.badRequest, "unauthorized_client", "the client may not use this grant type")
        }
    }

    private func mustUseDPoP(_ client: StoredClient, tenant: ResolvedTenant) -> Bool {
        tenant.policy.dpop.isRequired(clientRequestsBinding: client.metadata.dpopBoundAccessTokens)
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
