import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// OpenID Connect RP-Initiated Logout 1.0 at `GET|POST /t/{tenant}/logout` (the `end_session_endpoint`).
///
/// A valid `id_token_hint` for the signed-in user (or when nobody is signed in) ends the SSO session at
/// once; anything else asks the user on a page that posts to `/logout/confirm`. A
/// `post_logout_redirect_uri` must be one the client registered, exactly; otherwise nothing is ended and
/// there is no redirect, only an error page.
struct LogoutController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let keyStore: TenantKeyStore
    let pages: PageRenderer
    let sessions: SSOSessions
    let csrf: CSRFGuard

    init(settings: TokenServiceSettings, database: Database, keyStore: TenantKeyStore) throws {
        self.settings = settings
        self.database = database
        self.keyStore = keyStore
        self.pages = try PageRenderer()
        self.sessions = SSOSessions(hasher: settings.secretHasher)
        self.csrf = CSRFGuard(key: PageSecrets(hasher: settings.secretHasher).csrfKey)
    }

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("logout") { request, context in try await logout(request, context) }
        group.post("logout") { request, context in try await logout(request, context) }
        group.post("logout/confirm") { request, context in try await confirm(request, context) }
    }

    /// What a logout request asked for, once its client and redirect URI were checked.
    struct Validated: Sendable {
        var client: StoredClient?
        var postLogoutRedirectURI: String?
        var state: String?
        var hint: IDTokenHint?
    }

    /// A request that cannot be honoured: shown on a page, never redirected.
    struct Refusal: Error {
        let message: String
    }

    static let limit = 2048

    // MARK: /logout

    func logout(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let form: FormParameters
        do { form = try await parameters(of: request) } catch let error as OAuthError {
            return pages.error(error.errorDescription, tenant: tenant, status: error.status)
        }
        let endpoints = TenantEndpoints(settings: settings, tenant: tenant.id)
        var hint: IDTokenHint?
        if let token = form["id_token_hint"], !token.isEmpty {
            let keys = try await keyStore.publishedKeys(for: tenant).map(\.jwk)
            hint = IDTokenHint.verify(token, issuer: endpoints.issuer, keys: keys)
        }
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        do {
            return try await database.withTenantTransaction(tenant.id) { connection in
                let validated = try await validate(form, hint: hint, on: connection)
                let session = try await sessions.current(cookie, on: connection, logger: logger)
                if let hint = validated.hint, session.map({ $0.userID == hint.subject }) ?? true {
                    try await sessions.end(cookie, on: connection, logger: logger)
                    if let session { signedOut(session.userID, tenant: tenant, validated) }
                    return finish(validated, tenant: tenant)
                }
                return try await confirmation(
                    validated, userID: session?.userID, request: request, tenant: tenant, on: connection)
            }
        } catch let refusal as Refusal {
            return pages.error(refusal.message, tenant: tenant)
        }
    }

    /// `POST /logout/confirm`: the user's answer on the confirmation page (CSRF-checked, re-validated).
    func confirm(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let form: FormParameters
        switch try await pages.postedForm(request, tenant: tenant, csrf: csrf, from: "this sign-out page") {
        case .accepted(let posted): form = posted
        case .refused(let page): return page
        }
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        do {
            return try await database.withTenantTransaction(tenant.id) { connection in
                let validated = try await validate(form, hint: nil, on: connection)
                let session = try await sessions.current(cookie, on: connection, logger: logger)
                try await sessions.end(cookie, on: connection, logger: logger)
                if let session { signedOut(session.userID, tenant: tenant, validated) }
                return finish(validated, tenant: tenant)
            }
        } catch let refusal as Refusal {
            return pages.error(refusal.message, tenant: tenant)
        }
    }

    // MARK: validation

    /// The client (from `client_id` or the hint's audience, which must agree) and the redirect URI, which
    /// must be one of that client's `post_logout_redirect_uris`.
    func validate(_ form: FormParameters, hint: IDTokenHint?, on connection: PostgresConnection) async throws
        -> Validated
    {
        for name in ["client_id", "post_logout_redirect_uri", "state"] {
            if let value = form[name], value.utf8.count > Self.limit {
                throw Refusal(message: "The sign-out request is invalid: \(name) is too long.")
            }
        }
        let requested = form["client_id"].flatMap { $0.isEmpty ? nil : $0 }
        if let requested, let hint, requested != hint.clientID {
            throw Refusal(message: "The sign-out request is invalid: client_id does not match the id_token_hint.")
        }
        var validated = Validated(state: form["state"].flatMap { $0.isEmpty ? nil : $0 }, hint: hint)
        if let clientID = requested ?? hint?.clientID {
            validated.client = try await ClientRepository.find(clientID, on: connection, logger: database.logger)
        }
        if requested != nil, validated.client == nil {
            throw Refusal(message: "The sign-out request is invalid: the application is unknown.")
        }
        guard let uri = form["post_logout_redirect_uri"], !uri.isEmpty else { return validated }
        guard let client = validated.client else {
            throw Refusal(
                message:
                    "The sign-out request is invalid: a post_logout_redirect_uri needs a client_id or an id_token_hint."
            )
        }
        guard client.isUsable(at: Date()), (client.metadata.postLogoutRedirectURIs ?? []).contains(uri) else {
            throw Refusal(
                message:
                    "The sign-out request is invalid: the post_logout_redirect_uri is not registered for the application."
            )
        }
        validated.postLogoutRedirectURI = uri
        return validated
    }

    // MARK: responses

    /// The confirmation page (sets the CSRF cookie when the browser has none).
    private func confirmation(
        _ validated: Validated, userID: UUID?, request: Request, tenant: ResolvedTenant,
        on connection: PostgresConnection
    ) async throws -> Response {
        let (csrfCookie, isNew) = csrf.cookieValue(from: request.cookies[CSRFGuard.cookieName]?.value)
        var values: [String: Any] = [
            "action": "/t/\(tenant.id)/logout/confirm", "csrfToken": csrf.token(for: csrfCookie, tenant: tenant.id),
        ]
        values["clientID"] = validated.client?.clientID
        values["clientName"] = validated.client.map { $0.metadata.clientName ?? $0.clientID }
        values["postLogoutRedirectURI"] = validated.postLogoutRedirectURI
        values["state"] = validated.state
        if let userID {
            let rows = try await connection.query(
                "SELECT username FROM users WHERE user_id = \(userID)", logger: database.logger)
            for try await name in rows.decode(String.self) { values["username"] = name }
        }
        var response = pages.page(
            "sign-out", title: "Sign out", tenant: tenant, values: values,
            formTarget: validated.postLogoutRedirectURI)
        if isNew {
            response.setCookie(
                Cookie(
                    name: CSRFGuard.cookieName, value: csrfCookie, path: "/t/\(tenant.id)", secure: isSecure,
                    httpOnly: true, sameSite: .strict))
        }
        return response
    }

    /// After the session ended: back to the application with `state`, or the signed-out page.
    private func finish(_ validated: Validated, tenant: ResolvedTenant) -> Response {
        var response: Response
        if let uri = validated.postLogoutRedirectURI {
            var location = uri
            if let state = validated.state {
                location += (uri.contains("?") ? "&" : "?") + "state=" + AuthorizationResponseTarget.encode(state)
            }
            response = AuthorizationController.redirect(location)
        } else {
            response = pages.page("signed-out", title: "Signed out", tenant: tenant)
        }
        response.setCookie(
            Cookie(
                name: SSOSessions.cookieName, value: "", maxAge: 0, path: "/t/\(tenant.id)", secure: isSecure,
                httpOnly: true, sameSite: .lax))
        return response
    }

    private func signedOut(_ userID: UUID, tenant: ResolvedTenant, _ validated: Validated) {
        database.logger.info(
            "signed out",
            metadata: [
                "tenant": .string(tenant.id), "user_id": .string(userID.uuidString.lowercased()),
                "client_id": .string(validated.client?.clientID ?? "-"),
            ])
    }

    private var isSecure: Bool { settings.publicURL.lowercased().hasPrefix("https://") }

    /// Query parameters (GET) or the form body (POST), each at most once and valid UTF-8.
    private func parameters(of request: Request) async throws -> FormParameters {
        if request.method == .post { return try await FormParameters.read(from: request) }
        guard let query = request.uri.query else { return try FormParameters.parse("") }
        guard query.utf8.count <= 16 * 1024 else { throw OAuthError.invalidRequest("the request is too large") }
        return try FormParameters.parse(query)
    }
}
