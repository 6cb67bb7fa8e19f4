import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging

/// The server-rendered admin page `GET /admin/t/{tenant}`: search a tenant's instances and revoke them with a
/// reason. Sign-in with an admin client's credentials, a server-side session, a CSRF token on every form.
struct AdminPageController: Sendable {
    typealias Context = LatchkeyRequestContext
    /// Pre-session double-submit cookie protecting the sign-in form.
    static let csrfCookieName = "__Host-latchkey_admin_csrf"
    static let pageSize = 50

    let database: Database
    let sessions: AdminSessions
    let signIn: AdminSignIn
    let revocation: ClientRevocation
    let renderer: AdminPageRenderer
    let csrf: CSRFGuard
    let clientAddresses: ClientAddressResolver

    init(settings: GatewaySettings, database: Database, outbox: OutboxWriter) throws {
        self.database = database
        clientAddresses = settings.clientAddresses
        sessions = AdminSessions(
            database: database, hasher: settings.secretHasher, platformTenant: settings.platformTenant)
        signIn = AdminSignIn(
            database: database, hasher: settings.secretHasher, platformTenant: settings.platformTenant,
            sessions: sessions)
        revocation = ClientRevocation(database: database, outbox: outbox)
        renderer = try AdminPageRenderer()
        csrf = CSRFGuard(key: settings.secretHasher.deriveKey("latchkey/registration-gateway/admin-csrf/v1"))
    }

    /// Routes under a group at `admin/t` (whose middleware resolves `:tenant`).
    func addRoutes(to group: RouterGroup<Context>) {
        group.get(":tenant") { request, context in try await instances(request, context) }
        group.get(":tenant/sign-in") { request, context in try await showSignIn(request, context) }
        group.post(":tenant/sign-in") { request, context in try await submitSignIn(request, context) }
        group.post(":tenant/sign-out") { request, context in try await signOut(request, context) }
        group.post(":tenant/clients/:client_id/revoke") { request, context in try await revokeClient(request, context) }
        group.post(":tenant/users/:user_id/revoke") { request, context in try await revokeUser(request, context) }
    }

    // MARK: Instances

    func instances(_ request: Request, _ context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        guard let session = try await sessions.current(sessionCookie(request), tenant: tenant) else {
            return AdminPagePaths.seeOther(AdminPagePaths.signIn(tenant))
        }
        let filters: AdminPageFilters
        do { filters = try AdminPageFilters(query: request.uri.query) } catch let error as OAuthError {
            return renderer.error(error.errorDescription, tenant: tenant, status: .badRequest)
        }
        let page = try await database.withTenantTransaction(tenant) { connection in
            try await ClientSearch.search(
                tenant: tenant, filters.search, after: filters.cursor, limit: Self.pageSize, on: connection,
                logger: database.logger)
        }
        let flash = try await sessions.takeFlash(for: session)
        let base = AdminPagePaths.base(tenant)
        let csrfToken = csrf.token(for: session.id, tenant: tenant)
        let returnQuery = filters.query
        var values = signedInValues(session, tenant: tenant)
        values["filters"] = [
            "user": filters.user, "template": filters.template, "createdFrom": filters.createdFrom,
            "createdTo": filters.createdTo,
        ]
        values["statuses"] = ([""] + AdminPageFilters.statuses).map { status -> [String: Any] in
            [
                "value": status, "label": status.isEmpty ? "Any" : status.capitalized,
                "selected": status == filters.status,
            ]
        }
        values["returnQuery"] = returnQuery
        values["clients"] = page.clients.enumerated().map { index, client in
            var row: [String: Any] = [
                "row": index + 1, "clientID": client.clientID, "clientIDPath": AdminPageFilters.encode(client.clientID),
                "clientName": client.clientName ?? "—",
                "user": client.username ?? client.authenticatedUser?.uuidString.lowercased() ?? "—",
                "template": client.softwareID ?? "—", "status": client.status,
                "created": Self.display(client.createdAt), "lastUsed": client.lastUsedAt.map(Self.display) ?? "never",
                "active": client.status == ClientStatus.active.rawValue, "csrfToken": csrfToken,
                "returnQuery": returnQuery, "base": base,
            ]
            if let reason = client.revocationReason { row["revocationReason"] = reason }
            return row
        }
        values["caption"] = "Instances of \(tenant), newest first" + (filters.cursor == nil ? "" : " (continued)")
        if filters.cursor != nil { values["firstPageURL"] = returnQuery.isEmpty ? base : "\(base)?\(returnQuery)" }
        if let next = page.next { values["nextPageURL"] = "\(base)?\(filters.query(after: next))" }
        // "Revoke all" when the search names one user who still has active instances.
        let users = Set(page.clients.compactMap(\.authenticatedUser))
        if !filters.user.isEmpty, users.count == 1, let user = users.first,
            page.clients.contains(where: { $0.status == ClientStatus.active.rawValue })
        {
            values["revokeAll"] = [
                "userID": user.uuidString.lowercased(), "userLabel": page.clients.first?.username ?? filters.user,
            ]
        }
        if let flash { values["flash"] = flash }
        return renderer.page("instances", title: "Instances", tenant: tenant, values: values)
    }

    // MARK: Revocation

    func revokeClient(_ request: Request, _ context: Context) async throws -> Response {
        try await sessionPost(request, context) { tenant, session, form in
            let clientID = try context.parameters.require("client_id")
            let reason = try Self.reason(form)
            try await revocation.revoke(clientID, tenant: tenant, actor: session.actor, detail: reason)
            context.logger.info(
                "client revoked", metadata: ["client_id": .string(clientID), "actor": .string(session.clientID)])
            return "Instance \(clientID) revoked."
        }
    }

    func revokeUser(_ request: Request, _ context: Context) async throws -> Response {
        try await sessionPost(request, context) { tenant, session, form in
            guard let user = UUID(uuidString: try context.parameters.require("user_id")) else {
                throw OAuthError.notFound("unknown user")
            }
            let reason = try Self.reason(form)
            let outcome = try await revocation.revokeAll(of: user, tenant: tenant, actor: session.actor, detail: reason)
            let revoked = outcome.clients
            context.logger.info(
                "user's clients revoked",
                metadata: ["count": .stringConvertible(revoked.count), "actor": .string(session.clientID)])
            let instances =
                revoked.count == 1 ? "1 instance of the user revoked" : "\(revoked.count) instances of the user revoked"
            return instances + "; their sessions and tokens ended."
        }
    }

    /// Every signed-in form post: form encoding, session and CSRF token are checked before `handle` runs;
    /// its outcome (or its 4xx error) becomes the flash message of the page the 303 leads back to.
    private func sessionPost(
        _ request: Request, _ context: Context,
        handle: (TenantSlug, AdminSession, FormParameters) async throws -> String
    ) async throws -> Response {
        let tenant = try context.requireTenant()
        let form: FormParameters
        do { form = try await FormParameters.read(from: request) } catch let error as OAuthError {
            return renderer.error(error.errorDescription, tenant: tenant.id, status: error.status)
        }
        guard let session = try await sessions.current(sessionCookie(request), tenant: tenant.id) else {
            return AdminPagePaths.seeOther(AdminPagePaths.signIn(tenant.id))
        }
        guard csrf.isValid(cookie: session.id, token: form["csrf_token"], tenant: tenant.id) else {
            return forbidden(tenant.id)
        }
        let message: String
        do { message = try await handle(tenant.slug, session, form) } catch let error as OAuthError
            where error.status.code < 500
        {
            message = "Not done: \(error.errorDescription)."
        }
        try await sessions.setFlash(message, for: session)
        let back = (try? AdminPageFilters(query: form["return_query"]))?.query ?? ""
        return AdminPagePaths.seeOther(AdminPagePaths.base(tenant.id) + (back.isEmpty ? "" : "?\(back)"))
    }

    private static func reason(_ form: FormParameters) throws -> String {
        guard let reason = form["reason"]?.trimmingCharacters(in: .whitespaces), !reason.isEmpty else {
            throw OAuthError.invalidRequest("a reason is required")
        }
        return try AdminController.bounded(reason, field: "reason", maximum: 500)
    }

    // MARK: Sign-in and sign-out

    func showSignIn(_ request: Request, _ context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        if try await sessions.current(sessionCookie(request), tenant: tenant) != nil {
            return AdminPagePaths.seeOther(AdminPagePaths.base(tenant))
        }
        return signInForm(request, tenant: tenant)
    }

    func submitSignIn(_ request: Request, _ context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        let form: FormParameters
        do { form = try await FormParameters.read(from: request) } catch let error as OAuthError {
            return renderer.error(error.errorDescription, tenant: tenant, status: error.status)
        }
        guard
            csrf.isValid(cookie: request.cookies[Self.csrfCookieName]?.value, token: form["csrf_token"], tenant: tenant)
        else {
            return forbidden(tenant)
        }
        let clientID = form["client_id"] ?? ""
        let secret = form["client_secret"] ?? ""
        let failure = "Invalid client ID or secret, or the client may not administer this tenant."
        guard !clientID.isEmpty, !secret.isEmpty, clientID.utf8.count <= 256, secret.utf8.count <= 1024 else {
            return signInForm(
                request, tenant: tenant, clientID: String(clientID.prefix(256)), error: failure, status: .badRequest)
        }
        let outcome = try await signIn.signIn(
            clientID: clientID, secret: secret, tenant: tenant,
            source: clientAddresses.clientAddress(request, context: context),
            replacing: sessionCookie(request))
        switch outcome {
        case .signedIn(let sessionID):
            context.logger.info("admin page sign-in", metadata: ["client_id": .string(clientID)])
            var response = AdminPagePaths.seeOther(AdminPagePaths.base(tenant))
            response.setCookie(Self.cookie(AdminSessions.cookieName, sessionID, maxAge: Int(sessions.absoluteLifetime)))
            return response
        case .invalid:
            return signInForm(request, tenant: tenant, clientID: clientID, error: failure, status: .unauthorized)
        case .throttled(let retryAfter):
            return renderer.error(
                "Too many failed sign-in attempts. Please wait before trying again.", tenant: tenant,
                status: .tooManyRequests,
                retryAfter: retryAfter)
        }
    }

    func signOut(_ request: Request, _ context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        let form: FormParameters
        do { form = try await FormParameters.read(from: request) } catch let error as OAuthError {
            return renderer.error(error.errorDescription, tenant: tenant, status: error.status)
        }
        if let session = try await sessions.current(sessionCookie(request), tenant: tenant) {
            guard csrf.isValid(cookie: session.id, token: form["csrf_token"], tenant: tenant) else {
                return forbidden(tenant)
            }
            try await sessions.end(session)
        }
        var response = AdminPagePaths.seeOther(AdminPagePaths.signIn(tenant))
        response.setCookie(Self.cookie(AdminSessions.cookieName, "", maxAge: 0))
        return response
    }

    // MARK: Helpers

    private func signInForm(
        _ request: Request, tenant: String, clientID: String = "", error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let (cookie, isNew) = csrf.cookieValue(from: request.cookies[Self.csrfCookieName]?.value)
        var values: [String: Any] = ["csrfToken": csrf.token(for: cookie, tenant: tenant), "clientID": clientID]
        if let error { values["error"] = error }
        var response = renderer.page("sign-in", title: "Sign in", tenant: tenant, values: values, status: status)
        if isNew { response.setCookie(Self.cookie(Self.csrfCookieName, cookie, maxAge: nil)) }
        return response
    }

    private func forbidden(_ tenant: String) -> Response {
        renderer.error(
            "This form was not sent from this admin page, or it has expired. Go back, reload the page and try again.",
            tenant: tenant, status: .forbidden)
    }

    private func signedInValues(_ session: AdminSession, tenant: String) -> [String: Any] {
        ["signedIn": true, "actor": session.clientID, "csrfToken": csrf.token(for: session.id, tenant: tenant)]
    }

    private func sessionCookie(_ request: Request) -> String? { request.cookies[AdminSessions.cookieName]?.value }

    /// `__Host-` cookies: Secure, Path=/, no Domain — the browser refuses them otherwise, so no subdomain or
    /// plain-http page can plant or overwrite them.
    private static func cookie(_ name: String, _ value: String, maxAge: Int?) -> Cookie {
        Cookie(name: name, value: value, maxAge: maxAge, path: "/", secure: true, httpOnly: true, sameSite: .strict)
    }

    /// `2026-01-31 09:26 UTC`.
    static func display(_ date: Date) -> String {
        let text = RFC3339Timestamp.string(from: date)
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(5)) + " UTC"
    }
}
