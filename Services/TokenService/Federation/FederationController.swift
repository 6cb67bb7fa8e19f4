import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// `GET /t/{tenant}/auth/{provider}` and its `/callback`: sign-in through an upstream OpenID Connect
/// provider as a confidential client (backend-for-frontend: the browser never holds upstream tokens), then the pending authorization resumes.
struct FederationController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let authorization: AuthorizationController
    let upstream: UpstreamProviderClient
    let accounts: ExternalAccounts
    let cookies: FederationCookie
    let formPosts: TenantBoundSealer

    init(
        settings: TokenServiceSettings, database: Database, authorization: AuthorizationController,
        upstream: UpstreamProviderClient, outbox: OutboxWriter
    ) {
        self.settings = settings
        self.database = database
        self.authorization = authorization
        self.upstream = upstream
        self.accounts = ExternalAccounts(outbox: outbox)
        let secrets = PageSecrets(hasher: settings.secretHasher)
        self.cookies = FederationCookie(
            sealer: TenantBoundSealer(key: secrets.federationKey),
            secure: settings.publicURL.lowercased().hasPrefix("https://"))
        self.formPosts = TenantBoundSealer(key: secrets.formPostKey)
    }

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("auth/:provider") { request, context in try await start(request, context) }
        group.get("auth/:provider/callback") { request, context in try await callback(request, context) }
        group.post("auth/:provider/callback") { request, context in try await formPostCallback(request, context) }
    }

    private var pages: PageRenderer { authorization.pages }

    /// Our redirect URI at the provider: `{issuer}/auth/{provider}/callback`.
    func redirectURI(tenant: String, provider: String) -> String {
        "\(TenantEndpoints(settings: settings, tenant: tenant).issuer)/auth/\(provider)/callback"
    }

    // MARK: start

    func start(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        guard let provider = context.parameters.get("provider").flatMap(tenant.policy.upstreamIdentityProvider(id:))
        else {
            return pages.error("This sign-in provider is not available.", tenant: tenant, status: .notFound)
        }
        let sealed = request.uri.queryParameters["authorization_request"].map(String.init)
        guard let pending = authorization.sealer.open(sealed, tenant: tenant.id) else {
            return pages.error(AuthorizationController.expiredMessage, tenant: tenant)
        }
        let metadata: UpstreamProviderMetadata
        do { metadata = try await upstream.metadata(issuer: provider.issuer) } catch {
            database.logger.warning(
                "upstream discovery failed",
                metadata: ["provider": "\(provider.id)", "error": "\(error.logDescription)"])
            return pages.error(
                "\(provider.displayName) cannot be reached right now. Try again later.", tenant: tenant,
                status: .badGateway)
        }
        let state = FederationState(
            state: SecretTokens.generate(), nonce: SecretTokens.generate(), verifier: PKCE.generateVerifier(),
            provider: provider.id, pending: pending,
            expiresAt: Date().addingTimeInterval(TimeInterval(FederationState.lifetime)))
        var query: [(String, String)] = [
            ("response_type", "code"), ("client_id", provider.clientID),
            ("redirect_uri", redirectURI(tenant: tenant.id, provider: provider.id)),
            ("scope", provider.scopes.joined(separator: " ")), ("state", state.state), ("nonce", state.nonce),
            ("code_challenge", PKCE.s256Challenge(for: state.verifier)), ("code_challenge_method", "S256"),
        ]
        if provider.responseMode == .formPost { query.append(("response_mode", "form_post")) }
        let separator = metadata.authorizationEndpoint.contains("?") ? "&" : "?"
        let location =
            metadata.authorizationEndpoint + separator
            + query.map { "\($0.0)=\(AuthorizationResponseTarget.encode($0.1))" }.joined(separator: "&")
        var response = AuthorizationController.redirect(location)
        response.setCookie(try cookies.cookie(state, tenant: tenant.id))
        return response
    }

    // MARK: callback

    /// `POST …/callback`: a `form_post` response. The browser arrives cross-site without the Lax state
    /// cookie, so nothing is checked or consumed here: the response is sealed and handed to the GET
    /// callback on our origin, where the cookie arrives (see ``FormPostHandoff``).
    func formPostCallback(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        guard let provider = context.parameters.get("provider").flatMap(tenant.policy.upstreamIdentityProvider(id:))
        else {
            return pages.error("This sign-in provider is not available.", tenant: tenant, status: .notFound)
        }
        guard provider.responseMode == .formPost else {
            return pages.error("This sign-in provider does not answer with a form.", tenant: tenant)
        }
        let posted: UpstreamAuthorizationResponse
        do { posted = try UpstreamAuthorizationResponse(try await FormParameters.read(from: request)) } catch let error
            as OAuthError
        {
            return pages.error(error.errorDescription, tenant: tenant, status: error.status)
        }
        let handoff = FormPostHandoff(
            provider: provider.id, response: posted, expiresAt: Date().addingTimeInterval(FormPostHandoff.lifetime))
        let location =
            redirectURI(tenant: tenant.id, provider: provider.id) + "?\(FormPostHandoff.parameter)="
            + (try formPosts.seal(handoff, tenant: tenant.id))
        return Response(
            status: .seeOther, headers: [.location: location, .cacheControl: "no-store", .pragma: "no-cache"])
    }

    func callback(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let providerID = context.parameters.get("provider") ?? ""
        var response = try await handleCallback(request, context, tenant: tenant, providerID: providerID)
        response.setCookie(cookies.clearing(tenant: tenant.id))
        return response
    }

    private func handleCallback(
        _ request: Request, _ context: LatchkeyRequestContext, tenant: ResolvedTenant, providerID: String
    ) async throws -> Response {
        let failed = "Signing in with the provider did not work. Return to the application and start again."
        guard let provider = tenant.policy.upstreamIdentityProvider(id: providerID) else {
            return pages.error("This sign-in provider is not available.", tenant: tenant, status: .notFound)
        }
        guard let saved = cookies.open(request.cookies[FederationCookie.name]?.value, tenant: tenant.id),
            saved.provider == provider.id
        else {
            return pages.error(
                "This sign-in attempt has expired or is invalid. Return to the application and start again.",
                tenant: tenant)
        }
        let query: UpstreamAuthorizationResponse
        do {
            let raw = request.uri.query ?? ""
            guard raw.utf8.count <= 16 * 1024 else { throw OAuthError.invalidRequest("the request is too large") }
            let parameters = try FormParameters.parse(raw)
            if provider.responseMode == .formPost {
                // Only what our own POST callback sealed counts: a code in the query is not a form_post response.
                guard
                    let handoff = formPosts.open(
                        FormPostHandoff.self, parameters[FormPostHandoff.parameter], tenant: tenant.id),
                    handoff.provider == provider.id, handoff.expiresAt > Date()
                else { return pages.error(failed, tenant: tenant) }
                query = handoff.response
            } else {
                query = try UpstreamAuthorizationResponse(parameters)
            }
        } catch let error as OAuthError {
            return pages.error(error.errorDescription, tenant: tenant, status: error.status)
        }
        guard let state = query.state, ConstantTime.equals(state, saved.state) else {
            return pages.error(failed, tenant: tenant)
        }
        let target = AuthorizationResponseTarget(
            redirectURI: saved.pending.redirectURI, state: saved.pending.state,
            issuer: TenantEndpoints(settings: settings, tenant: tenant.id).issuer)
        if query.error != nil, saved.pending.client == nil {
            return pages.error("Sign-in with \(provider.id) was not completed.", tenant: tenant)
        }
        if query.error != nil {
            // The user declined (or the provider refused): the client learns it the RFC 6749 way.
            return AuthorizationController.redirect(
                target.url([
                    ("error", "access_denied"), ("error_description", "sign-in with \(provider.id) was not completed"),
                ]))
        }
        guard let code = query.code, !code.isEmpty, code.utf8.count <= 2048 else {
            return pages.error(failed, tenant: tenant)
        }
        let claims: UpstreamIDTokenClaims
        do {
            claims = try await signIn(provider, code: code, saved: saved, tenant: tenant.id)
        } catch {
            database.logger.warning(
                "upstream sign-in failed", metadata: ["provider": "\(provider.id)", "error": "\(error.logDescription)"])
            BusinessMetrics.signInFailure(tenant: tenant.slug.rawValue, reason: .upstreamFailed)
            return pages.error(
                failed, tenant: tenant, status: error is UpstreamIDTokenValidator.Rejection ? .badRequest : .badGateway)
        }
        let oldSession = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        return try await database.withTenantTransaction(tenant.id) { connection in
            guard try await authorization.applicationIsActive(saved.pending, on: connection) else {
                return pages.error("The application that sent you here is no longer active.", tenant: tenant)
            }
            let userID = try await accounts.provision(
                provider: provider.id, subject: claims.sub, preferredUsername: claims.preferredUsername,
                name: query.userName, email: claims.email,
                emailVerified: claims.emailVerified,
                tenant: tenant, clientID: saved.pending.client, on: connection, logger: logger)
            guard try await UserStatus.isActive(userID, on: connection, logger: logger) else {
                return pages.error("This account cannot sign in.", tenant: tenant, status: .forbidden)
            }
            return try await authorization.complete(
                saved.pending, userID: userID, tenant: tenant, oldSession: oldSession, on: connection, request: request)
        }
    }

    /// Code exchange (with the provider's client authentication and PKCE) and ID token validation.
    private func signIn(
        _ provider: UpstreamIdentityProvider, code: String, saved: FederationState, tenant: String
    ) async throws -> UpstreamIDTokenClaims {
        let metadata = try await upstream.metadata(issuer: provider.issuer)
        let credential = try await UpstreamCredentials(
            envelope: settings.keyEnvelope, references: settings.upstreamSecretReferences, database: database
        ).credential(for: provider, tokenEndpoint: metadata.tokenEndpoint, tenant: tenant)
        let idToken = try await upstream.exchange(
            code: code, verifier: saved.verifier, redirectURI: redirectURI(tenant: tenant, provider: provider.id),
            clientID: provider.clientID, credential: credential, metadata: metadata)
        let jws = try UpstreamIDTokenValidator.parse(idToken)
        let keys = try await upstream.keys.keys(issuer: provider.issuer, kid: jws.header.kid)
        return try UpstreamIDTokenValidator(issuer: provider.issuer, clientID: provider.clientID)
            .validate(jws, keys: keys, nonce: saved.nonce)
    }
}
