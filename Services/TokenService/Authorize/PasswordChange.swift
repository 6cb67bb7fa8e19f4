import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// `GET|POST /t/{tenant}/account/password`: a user signed in to this tenant (the SSO session cookie) changes
/// their password. The current password is asked for again (a session left open on a shared device must not
/// be enough), guesses count against the sign-in limits, and the tenant's password policy applies.
extension AuthorizationController {
    static let passwordChangeTitle = "Change your password"
    static let signInFirst = "Sign in to this service first, then come back to change your password."

    /// Without a session the browser is sent to the account sign-in, which returns here.
    func showPasswordChange(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        guard let account = try await signedInAccount(request, tenant: tenant) else {
            let signIn = "/t/\(tenant.id)/account/login?return_to=account/password"
            return Response(
                status: .seeOther, headers: [.location: signIn, .cacheControl: "no-store", .pragma: "no-cache"])
        }
        return renderPasswordChange(request, tenant: tenant, username: account.username)
    }

    func changePassword(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let form: FormParameters
        switch try await pages.postedForm(request, tenant: tenant, csrf: csrf, from: "this page") {
        case .accepted(let posted): form = posted
        case .refused(let page): return page
        }
        guard let account = try await signedInAccount(request, tenant: tenant) else {
            return pages.error(Self.signInFirst, tenant: tenant, status: .unauthorized)
        }
        func reshow(_ problem: String, _ status: HTTPResponse.Status) -> Response {
            renderPasswordChange(request, tenant: tenant, username: account.username, error: problem, status: status)
        }
        let current = form["current_password"] ?? ""
        let new = form["new_password"] ?? ""
        guard !current.isEmpty, current.utf8.count <= 1024 else {
            return reshow("Enter your current password.", .badRequest)
        }
        let source = settings.clientAddresses.clientAddress(request, context: context)
        let logger = database.logger
        let wait = try await database.withTenantTransaction(tenant.id) { connection in
            try await throttle.count(
                SignInThrottle.signInBuckets(tenant.policy.rateLimits, source: source)
                    + [.init(key: "password-change:\(account.stored.userID)", limit: 5)],
                on: connection, logger: logger)
        }
        if let wait { return tooManyAttempts(tenant, retryAfter: wait) }
        let verified: UUID?
        do {
            verified = try await accounts.verify(current, against: account.stored, limiter: settings.hashingLimiter)
        } catch let busy as PasswordHashingLimiter.Busy {
            return self.busy(tenant, busy)
        }
        guard verified != nil, let oldHash = account.stored.hash else {
            return reshow("The current password is not correct.", .unauthorized)
        }
        guard new == form["confirm_password"] else { return reshow("The new passwords do not match.", .badRequest) }
        let policy = tenant.policy.passwordPolicy
        if let problem = SignUpRules.passwordProblem(new, username: account.username, policy: policy) {
            return reshow(problem, .badRequest)
        }
        let hash: String
        do {
            let hasher = settings.passwordHasher
            hash = try await settings.hashingLimiter.run { try hasher.hash(new) }
        } catch let busy as PasswordHashingLimiter.Busy {
            return self.busy(tenant, busy)
        }
        let session = request.cookies[SSOSessions.cookieName]?.value ?? ""
        let changed = try await database.withTenantTransaction(tenant.id) { connection in
            try await accounts.replacePassword(
                of: account.stored.userID, in: tenant, from: oldHash, to: hash, keeping: session, on: connection,
                logger: logger)
        }
        // Another change won the race: the password checked above is no longer the user's.
        guard changed else { return reshow("The current password is not correct.", .unauthorized) }
        logger.info("password changed by its user", metadata: ["user": "\(account.stored.userID)"])
        return renderPasswordChange(request, tenant: tenant, username: account.username, done: true)
    }

    /// The user of the request's live session with their stored password, if any.
    private func signedInAccount(_ request: Request, tenant: ResolvedTenant) async throws
        -> (stored: UserAccounts.StoredPassword, username: String)?
    {
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        return try await database.withTenantTransaction(tenant.id) { connection in
            guard let session = try await sessions.current(cookie, on: connection, logger: logger) else { return nil }
            return try await accounts.find(userID: session.userID, on: connection, logger: logger)
        }
    }

    private func renderPasswordChange(
        _ request: Request, tenant: ResolvedTenant, username: String, error: String? = nil, done: Bool = false,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let (csrfCookie, isNew) = csrf.cookieValue(from: request.cookies[CSRFGuard.cookieName]?.value)
        let policy = tenant.policy.passwordPolicy
        var values: [String: Any] = [
            "action": "/t/\(tenant.id)/account/password", "csrfToken": csrf.token(for: csrfCookie, tenant: tenant.id),
            "username": username, "passwordMinLength": policy.minLength, "passwordMaxLength": policy.maxLength,
            "passwordHint": SignUpRules.passwordHint(policy), "done": done,
        ]
        if let error { values["error"] = error }
        var response = pages.page(
            "change-password", title: Self.passwordChangeTitle, tenant: tenant, values: values, status: status)
        if isNew {
            response.setCookie(
                cookie(CSRFGuard.cookieName, csrfCookie, tenant: tenant.id, maxAge: nil, sameSite: .strict))
        }
        return response
    }
}
