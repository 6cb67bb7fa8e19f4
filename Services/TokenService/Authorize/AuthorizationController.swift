import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// `GET|POST /t/{tenant}/authorize` and the sign-in, sign-up and consent pages it leads to.
struct AuthorizationController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let pages: PageRenderer
    let accounts: UserAccounts
    let throttle: SignInThrottle
    let sessions: SSOSessions
    let codes: AuthorizationCodes
    let sealer: PendingAuthorizationSealer
    let csrf: CSRFGuard

    init(settings: TokenServiceSettings, database: Database, outbox: OutboxWriter) throws {
        self.settings = settings
        self.database = database
        self.pages = try PageRenderer()
        self.accounts = try UserAccounts(
            passwordHasher: settings.passwordHasher, sessionHasher: settings.secretHasher, outbox: outbox)
        self.throttle = SignInThrottle()
        self.sessions = SSOSessions(hasher: settings.secretHasher)
        self.codes = AuthorizationCodes(hasher: settings.secretHasher)
        let secrets = PageSecrets(hasher: settings.secretHasher)
        self.sealer = PendingAuthorizationSealer(key: secrets.sealingKey)
        self.csrf = CSRFGuard(key: secrets.csrfKey)
    }

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("authorize") { request, context in try await authorize(request, context) }
        group.post("authorize") { request, context in try await authorize(request, context) }
        group.get("login") { request, context in try await showPage(.signIn, request, context) }
        group.post("login") { request, context in try await signIn(request, context) }
        group.get("signup") { request, context in try await showPage(.signUp, request, context) }
        group.post("signup") { request, context in try await signUp(request, context) }
        group.post("consent") { request, context in try await answerConsent(request, context) }
        group.get("account/login") { request, context in try await startAccountSignIn(request, context) }
        group.get("account/password") { request, context in try await showPasswordChange(request, context) }
        group.post("account/password") { request, context in try await changePassword(request, context) }
    }

    // MARK: /authorize

    func authorize(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let form: FormParameters
        do { form = try await parameters(of: request) } catch let error as OAuthError {
            return pages.error(error.errorDescription, tenant: tenant, status: error.status)
        }
        let issuer = TenantEndpoints(settings: settings, tenant: tenant.id).issuer
        let validator = AuthorizationRequestValidator(tenant: tenant, issuer: issuer)
        let sessionCookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        do {
            return try await database.withTenantTransaction(tenant.id) { connection in
                let client = try await form["client_id"].asyncFlatMap {
                    $0.utf8.count <= AuthorizationRequestValidator.Limits.clientID
                        ? try await ClientRepository.find($0, on: connection, logger: logger) : nil
                }
                let (verified, target) = try validator.verifyClientAndRedirect(form, client: client)
                let pending = try validator.validate(form, client: verified, target: target)
                if let session = try await sessions.current(sessionCookie, on: connection, logger: logger),
                    !pending.forceLogin
                {
                    let decision = try await Consents.decide(
                        pending, client: verified, userID: session.userID, policy: tenant.policy.consent,
                        on: connection, logger: logger)
                    if decision == .silent {
                        let code = try await codes.issue(
                            pending, userID: session.userID, authTime: session.authTime, tenant: tenant,
                            on: connection, logger: logger)
                        return Self.redirect(target.url([("code", code)]))
                    }
                    // OIDC Core §3.1.2.6: a silent request that would need the user's approval.
                    if AuthorizationRequestValidator.isPromptNone(form) {
                        throw AuthorizeFailure.redirect(
                            target, error: "consent_required", description: "the user must approve this application")
                    }
                    return try await renderConsent(
                        pending, client: verified, userID: session.userID, request: request, tenant: tenant,
                        on: connection)
                }
                if AuthorizationRequestValidator.isPromptNone(form) {
                    throw AuthorizeFailure.redirect(
                        target, error: "login_required", description: "the user must sign in")
                }
                // `idp_hint` (Keycloak's `kc_idp_hint`) naming one of the tenant's providers skips the page; an
                // unknown hint shows it, as if none had been given.
                if let hint = form["idp_hint"] ?? form["kc_idp_hint"],
                    let provider = tenant.policy.upstreamIdentityProvider(id: hint)
                {
                    let sealed = try sealer.seal(pending, tenant: tenant.id)
                    return Self.redirect(
                        "/t/\(tenant.id)/auth/\(AuthorizationResponseTarget.encode(provider.id))?authorization_request=\(sealed)"
                    )
                }
                return try renderForm(.signIn, pending: pending, request: request, tenant: tenant)
            }
        } catch let failure as AuthorizeFailure {
            switch failure {
            case .page(let message): return pages.error(message, tenant: tenant)
            case .redirect(let target, let error, let description):
                return Self.redirect(target.url([("error", error), ("error_description", description)]))
            }
        }
    }

    /// Query parameters (GET) or the form body (POST), each at most once and valid UTF-8.
    private func parameters(of request: Request) async throws -> FormParameters {
        if request.method == .post { return try await FormParameters.read(from: request) }
        guard let query = request.uri.query else { return try FormParameters.parse("") }
        guard query.utf8.count <= 16 * 1024 else { throw OAuthError.invalidRequest("the request is too large") }
        return try FormParameters.parse(query)
    }

    // MARK: pages

    enum Page {
        case signIn, signUp, consent

        var template: String {
            switch self {
            case .signIn: "sign-in"
            case .signUp: "sign-up"
            case .consent: "consent"
            }
        }
        var title: String {
            switch self {
            case .signIn: "Sign in"
            case .signUp: "Create an account"
            case .consent: "Allow access"
            }
        }
        var path: String {
            switch self {
            case .signIn: "login"
            case .signUp: "signup"
            case .consent: "consent"
            }
        }
    }

    /// `GET /login` and `GET /signup`: the form for a sealed pending request (links between the two pages).
    func showPage(_ page: Page, _ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let sealed = request.uri.queryParameters["authorization_request"].map(String.init)
        guard let pending = sealer.open(sealed, tenant: tenant.id) else { return expired(tenant) }
        if page == .signUp, !allowsSignUp(tenant) { return signUpClosed(tenant) }
        return try renderForm(page, pending: pending, request: request, tenant: tenant)
    }

    /// Self sign-up follows the tenant policy (`self_signup`; off by default in the platform tenant).
    private func allowsSignUp(_ tenant: ResolvedTenant) -> Bool {
        tenant.policy.allowsSelfSignup(isPlatformTenant: tenant.slug == settings.platformTenant)
    }

    private func signUpClosed(_ tenant: ResolvedTenant) -> Response {
        pages.error(
            "New accounts cannot be created here. Ask your administrator for an account.", tenant: tenant,
            status: .forbidden)
    }

    /// A form page with a fresh sealed request and a CSRF token (setting the CSRF cookie when missing).
    private func renderForm(
        _ page: Page, pending: AuthorizationRequest, request: Request, tenant: ResolvedTenant,
        values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) throws -> Response {
        let (csrfCookie, isNew) = csrf.cookieValue(from: request.cookies[CSRFGuard.cookieName]?.value)
        let sealed = try sealer.seal(pending, tenant: tenant.id)
        let base = "/t/\(tenant.id)"
        var all: [String: Any] = [
            "action": "\(base)/\(page.path)", "csrfToken": csrf.token(for: csrfCookie, tenant: tenant.id),
            "authorizationRequest": sealed,
            "canSignUp": allowsSignUp(tenant),
            "signUpURL": "\(base)/signup?authorization_request=\(sealed)",
            "signInURL": "\(base)/login?authorization_request=\(sealed)",
            "hasProviders": !tenant.policy.upstreamIdentityProviders.isEmpty,
            "passwordMinLength": tenant.policy.passwordPolicy.minLength,
            "passwordMaxLength": tenant.policy.passwordPolicy.maxLength,
            "passwordHint": SignUpRules.passwordHint(tenant.policy.passwordPolicy),
            // "Continue with …" links: the sealed request travels to the federation start.
            "providers": tenant.policy.upstreamIdentityProviders.map { provider in
                [
                    "displayName": provider.displayName,
                    "url":
                        "\(base)/auth/\(AuthorizationResponseTarget.encode(provider.id))?authorization_request=\(sealed)",
                ]
            },
        ]
        all.merge(values) { _, new in new }
        var response = pages.page(
            page.template, title: page.title, tenant: tenant, values: all, status: status,
            formTarget: pending.client == nil ? nil : pending.redirectURI)
        if isNew {
            response.setCookie(
                cookie(CSRFGuard.cookieName, csrfCookie, tenant: tenant.id, maxAge: nil, sameSite: .strict))
        }
        return response
    }

    /// Every page POST: form encoding, CSRF and the sealed request are checked before `handle` runs.
    private func pagePost(
        _ request: Request, _ context: LatchkeyRequestContext,
        handle: (ResolvedTenant, FormParameters, AuthorizationRequest) async throws -> Response
    ) async throws -> Response {
        let tenant = try context.requireTenant()
        let form: FormParameters
        switch try await pages.postedForm(request, tenant: tenant, csrf: csrf, from: "this sign-in page") {
        case .accepted(let posted): form = posted
        case .refused(let page): return page
        }
        guard let pending = sealer.open(form["authorization_request"], tenant: tenant.id) else {
            return expired(tenant)
        }
        return try await handle(tenant, form, pending)
    }

    static let expiredMessage =
        "This sign-in request has expired or is invalid. Return to the application and start again."

    private func expired(_ tenant: ResolvedTenant) -> Response {
        pages.error(Self.expiredMessage, tenant: tenant)
    }

    // MARK: POST /login

    static let genericFailure = "invalid username or password"

    func signIn(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        try await pagePost(request, context) { tenant, form, pending in
            let username = form["username"] ?? ""
            let password = form["password"] ?? ""
            let reshow: [String: Any] = ["username": String(username.prefix(128)), "error": Self.genericFailure]
            guard !username.isEmpty, !password.isEmpty, username.utf8.count <= 128, password.utf8.count <= 1024 else {
                BusinessMetrics.signInFailure(tenant: tenant.slug.rawValue, reason: .invalidRequest)
                return try renderForm(
                    .signIn, pending: pending, request: request, tenant: tenant, values: reshow, status: .badRequest)
            }
            let account = username.lowercased()
            let source = settings.clientAddresses.clientAddress(request, context: context)
            let limits = tenant.policy.rateLimits
            let oldSession = request.cookies[SSOSessions.cookieName]?.value
            let logger = database.logger

            // Counters and the stored hash in one short transaction; scrypt runs after it, so a slow hash
            // never holds a pooled connection.
            enum Gate: Sendable {
                case refused(Int)
                case inactiveClient
                case proceed(known: Bool, stored: UserAccounts.StoredPassword?)
            }
            let gate: Gate = try await database.withTenantTransaction(tenant.id) { connection in
                if let wait = try await throttle.count(
                    SignInThrottle.signInBuckets(limits, source: source), on: connection, logger: logger)
                {
                    return .refused(wait)
                }
                let state = try await throttle.state(account: account, source: source, on: connection, logger: logger)
                if let wait = state.retryAfter { return .refused(wait) }
                if !state.known, limits.loginPerUserPerMinute > 0,
                    let wait = try await throttle.count(
                        [.init(key: "account:\(account)", limit: limits.loginPerUserPerMinute)], on: connection,
                        logger: logger)
                {
                    return .refused(wait)
                }
                guard try await applicationIsActive(pending, on: connection) else { return .inactiveClient }
                return .proceed(
                    known: state.known,
                    stored: try await accounts.find(username: username, on: connection, logger: logger))
            }
            let known: Bool
            let stored: UserAccounts.StoredPassword?
            switch gate {
            case .refused(let wait):
                BusinessMetrics.signInFailure(tenant: tenant.slug.rawValue, reason: .throttled)
                return tooManyAttempts(tenant, retryAfter: wait)
            case .inactiveClient:
                return pages.error("The application that sent you here is no longer active.", tenant: tenant)
            case .proceed(let isKnown, let row):
                known = isKnown
                stored = row
            }

            let verified: UUID?
            do {
                verified = try await accounts.verify(password, against: stored, limiter: settings.hashingLimiter)
            } catch let busy
                as PasswordHashingLimiter.Busy
            {
                BusinessMetrics.signInFailure(tenant: tenant.slug.rawValue, reason: .busy)
                return self.busy(tenant, busy)
            }
            guard let userID = verified, let oldHash = stored?.hash else {
                BusinessMetrics.signInFailure(tenant: tenant.slug.rawValue, reason: .invalidCredentials)
                try await database.withTenantTransaction(tenant.id) { connection in
                    try await throttle.recordFailure(
                        account: account, source: source, known: known, on: connection, logger: logger)
                }
                return try renderForm(
                    .signIn, pending: pending, request: request, tenant: tenant, values: reshow, status: .unauthorized)
            }
            // A hash made with weaker parameters than configured is replaced now that the password is at hand;
            // when hashing is saturated the upgrade waits for a later sign-in.
            var upgraded: String?
            let hasher = settings.passwordHasher
            if hasher.needsUpgrade(oldHash) {
                upgraded = try? await settings.hashingLimiter.run { try hasher.hash(password) }
            }
            return try await database.withTenantTransaction(tenant.id) { connection in
                try await throttle.recordSuccess(account: account, source: source, on: connection, logger: logger)
                if let upgraded {
                    try await connection.query(
                        "UPDATE users SET password_hash = \(upgraded) WHERE user_id = \(userID) AND password_hash = \(oldHash)",
                        logger: logger)
                }
                return try await complete(
                    pending, userID: userID, tenant: tenant, oldSession: oldSession, on: connection, request: request)
            }
        }
    }

    func tooManyAttempts(_ tenant: ResolvedTenant, retryAfter: Int) -> Response {
        pages.error(
            "Too many sign-in attempts. Please wait before trying again.", tenant: tenant, status: .tooManyRequests,
            retryAfter: retryAfter)
    }

    /// Every password-hashing slot is taken: 503 `temporarily_unavailable` with `Retry-After`.
    func busy(_ tenant: ResolvedTenant, _ busy: PasswordHashingLimiter.Busy) -> Response {
        pages.error(
            "The service is busy (temporarily_unavailable). Please try again in a moment.", tenant: tenant,
            status: .serviceUnavailable, retryAfter: busy.retryAfterSeconds)
    }

    // MARK: POST /signup

    func signUp(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        try await pagePost(request, context) { tenant, form, pending in
            guard allowsSignUp(tenant) else { return signUpClosed(tenant) }
            let username = form["username"] ?? ""
            let email = form["email"] ?? ""
            let password = form["password"] ?? ""
            func reshow(_ problem: String) throws -> Response {
                try renderForm(
                    .signUp, pending: pending, request: request, tenant: tenant,
                    values: [
                        "username": String(username.prefix(64)), "email": String(email.prefix(254)), "error": problem,
                    ],
                    status: .badRequest)
            }
            let source = settings.clientAddresses.clientAddress(request, context: context)
            let logger = database.logger
            let wait = try await database.withTenantTransaction(tenant.id) { connection in
                try await throttle.count(
                    SignInThrottle.signUpBuckets(tenant.policy.rateLimits, source: source), on: connection,
                    logger: logger)
            }
            if let wait {
                return pages.error(
                    "Too many accounts were created from here. Please wait before trying again.", tenant: tenant,
                    status: .tooManyRequests, retryAfter: wait)
            }
            if let problem = SignUpRules.usernameProblem(username) ?? SignUpRules.emailProblem(email)
                ?? SignUpRules.passwordProblem(password, username: username, policy: tenant.policy.passwordPolicy)
            {
                return try reshow(problem)
            }
            let hash: String
            do {
                let hasher = settings.passwordHasher
                hash = try await settings.hashingLimiter.run { try hasher.hash(password) }
            } catch let busy as PasswordHashingLimiter.Busy {
                return self.busy(tenant, busy)
            }
            let oldSession = request.cookies[SSOSessions.cookieName]?.value
            do {
                return try await database.withTenantTransaction(tenant.id) { connection in
                    guard try await applicationIsActive(pending, on: connection) else {
                        return pages.error("The application that sent you here is no longer active.", tenant: tenant)
                    }
                    let userID = try await accounts.register(
                        username: username, email: email, passwordHash: hash, tenant: tenant,
                        clientID: pending.client,
                        on: connection, logger: logger)
                    return try await complete(
                        pending, userID: userID, tenant: tenant, oldSession: oldSession, on: connection,
                        request: request)
                }
            } catch UserAccounts.SignUpProblem.usernameTaken {
                return try reshow("That username is not available. Choose another one.")
            }
        }
    }

    // MARK: consent

    /// The consent page for the signed-in user; the sealed request remembers who was asked.
    private func renderConsent(
        _ pending: AuthorizationRequest, client: StoredClient, userID: UUID, request: Request, tenant: ResolvedTenant,
        on connection: PostgresConnection
    ) async throws -> Response {
        var asked = pending
        asked.consentUser = userID
        var username: String?
        let rows = try await connection.query(
            "SELECT username FROM users WHERE user_id = \(userID)", logger: database.logger)
        for try await name in rows.decode(String.self) { username = name }
        var values: [String: Any] = [
            "clientName": client.metadata.clientName ?? client.clientID,
            "scopes": TenantPolicy.scopeTokens(pending.scope),
            "otherUsersInstance": client.authenticatedUser.map { $0 != userID } ?? false,
        ]
        values["username"] = username
        return try renderForm(.consent, pending: asked, request: request, tenant: tenant, values: values)
    }

    /// `POST /consent`: Allow issues the code (and remembers the approval), Deny returns `access_denied`.
    /// Only the user the page was shown to, still signed in, can answer it.
    func answerConsent(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        try await pagePost(request, context) { tenant, form, pending in
            guard let askedUser = pending.consentUser else { return expired(tenant) }
            let target = AuthorizationResponseTarget(
                redirectURI: pending.redirectURI, state: pending.state,
                issuer: TenantEndpoints(settings: settings, tenant: tenant.id).issuer)
            let sessionCookie = request.cookies[SSOSessions.cookieName]?.value
            let logger = database.logger
            return try await database.withTenantTransaction(tenant.id) { connection in
                guard let session = try await sessions.current(sessionCookie, on: connection, logger: logger),
                    session.userID == askedUser
                else {
                    return pages.error(
                        "Your sign-in session has ended or changed. Return to the application and start again.",
                        tenant: tenant)
                }
                guard let client = try await ClientRepository.find(pending.clientID, on: connection, logger: logger),
                    client.isUsable(at: Date())
                else {
                    return pages.error("The application that sent you here is no longer active.", tenant: tenant)
                }
                switch form["decision"] ?? "" {
                case "allow":
                    try await Consents.remember(
                        userID: session.userID, clientID: client.clientID, scope: pending.scope,
                        rememberFor: tenant.policy.consent.rememberFor, tenant: tenant.id, on: connection,
                        logger: logger)
                    let code = try await codes.issue(
                        pending, userID: session.userID, authTime: session.authTime, tenant: tenant,
                        on: connection, logger: logger)
                    return Self.redirect(target.url([("code", code)]))
                case "deny":
                    return Self.redirect(
                        target.url([
                            ("error", "access_denied"),
                            ("error_description", "the user denied access to this application"),
                        ]))
                default:
                    return pages.error("Choose Allow or Deny.", tenant: tenant)
                }
            }
        }
    }

    // MARK: completion

    /// A successful sign-in: new SSO session (rotated), then a code and the redirect back to the client, or
    /// the consent page when the client needs the user's approval.
    func complete(
        _ pending: AuthorizationRequest, userID: UUID, tenant: ResolvedTenant, oldSession: String?,
        on connection: PostgresConnection, request: Request
    ) async throws -> Response {
        let logger = database.logger
        let lifetime = tenant.policy.tokenLifetimes.ssoSession
        if let page = pending.accountPage {
            // A sign-in on the account pages: a session, and back to the page it started from.
            let session = try await sessions.start(
                userID: userID, tenant: tenant.id, replacing: oldSession, lifetime: lifetime, on: connection,
                logger: logger)
            var response = Response(
                status: .seeOther,
                headers: [
                    .location: "/t/\(tenant.id)/\(page.rawValue)", .cacheControl: "no-store", .pragma: "no-cache",
                ])
            response.setCookie(
                cookie(SSOSessions.cookieName, session, tenant: tenant.id, maxAge: lifetime, sameSite: .lax))
            return response
        }
        guard let client = try await ClientRepository.find(pending.clientID, on: connection, logger: logger),
            client.isUsable(at: Date())
        else {
            return pages.error("The application that sent you here is no longer active.", tenant: tenant)
        }
        let session = try await sessions.start(
            userID: userID, tenant: tenant.id, replacing: oldSession, lifetime: lifetime, on: connection, logger: logger
        )
        var response: Response
        let decision = try await Consents.decide(
            pending, client: client, userID: userID, policy: tenant.policy.consent, on: connection, logger: logger)
        if decision == .silent {
            let code = try await codes.issue(
                pending, userID: userID, authTime: Date(), tenant: tenant, on: connection, logger: logger)
            let target = AuthorizationResponseTarget(
                redirectURI: pending.redirectURI, state: pending.state,
                issuer: TenantEndpoints(settings: settings, tenant: tenant.id).issuer)
            response = Self.redirect(target.url([("code", code)]))
        } else {
            response = try await renderConsent(
                pending, client: client, userID: userID, request: request, tenant: tenant, on: connection)
        }
        response.setCookie(cookie(SSOSessions.cookieName, session, tenant: tenant.id, maxAge: lifetime, sameSite: .lax))
        return response
    }

    /// Whether the application a sign-in is for is still active; a sign-in on the account pages has none.
    func applicationIsActive(_ pending: AuthorizationRequest, on connection: PostgresConnection) async throws -> Bool {
        guard let client = pending.client else { return true }
        return try await ClientRepository.isActive(client, on: connection, logger: database.logger)
    }

    // MARK: GET /account/login

    /// `GET /t/{tenant}/account/login[?return_to=account/password]`: the sign-in page of the account pages
    /// themselves. The same forms, limits and providers as an application's sign-in; afterwards the browser
    /// returns to the account page (or the password page) instead of an application. Already signed in: straight there.
    func startAccountSignIn(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let requested = request.uri.queryParameters["return_to"].map(String.init)
        let page = requested.flatMap(AuthorizationRequest.AccountPage.init(rawValue:)) ?? .devices
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        let signedIn = try await database.withTenantTransaction(tenant.id) { connection in
            try await sessions.current(cookie, on: connection, logger: logger) != nil
        }
        if signedIn {
            return Response(
                status: .seeOther,
                headers: [
                    .location: "/t/\(tenant.id)/\(page.rawValue)", .cacheControl: "no-store", .pragma: "no-cache",
                ])
        }
        return try renderForm(.signIn, pending: .accountSignIn(returningTo: page), request: request, tenant: tenant)
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .found, headers: [.location: location, .cacheControl: "no-store", .pragma: "no-cache"])
    }

    func cookie(_ name: String, _ value: String, tenant: String, maxAge: Int?, sameSite: Cookie.SameSite)
        -> Cookie
    {
        Cookie(
            name: name, value: value, maxAge: maxAge, path: "/t/\(tenant)",
            secure: settings.publicURL.lowercased().hasPrefix("https://"), httpOnly: true, sameSite: sameSite)
    }
}

extension Optional {
    /// `flatMap` for an async transform.
    func asyncFlatMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
