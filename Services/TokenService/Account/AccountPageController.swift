import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// `GET /t/{tenant}/account`: the devices of the user signed in with the SSO cookie, with "sign out of this
/// device" and, for the instance's own user, "remove this device", each confirmed on its own page
/// (`GET|POST /t/{tenant}/account/clients/{client_id}/sign-out|remove`) with the sign-in pages' look, CSP
/// and CSRF protection.
struct AccountPageController: Sendable {
    let settings: TokenServiceSettings
    let database: Database
    let pages: PageRenderer
    let sessions: SSOSessions
    let csrf: CSRFGuard
    let devices: AccountDevices

    init(settings: TokenServiceSettings, database: Database, devices: AccountDevices) throws {
        self.settings = settings
        self.database = database
        self.pages = try PageRenderer()
        self.sessions = SSOSessions(hasher: settings.secretHasher)
        self.csrf = CSRFGuard(key: PageSecrets(hasher: settings.secretHasher).csrfKey)
        self.devices = devices
    }

    enum Action: String {
        case signOut = "sign-out"
        case remove

        var question: String {
            switch self {
            case .signOut: "Sign out of this device?"
            case .remove: "Remove this device?"
            }
        }
        var consequence: String {
            switch self {
            case .signOut:
                "The app on this device loses your access at once; other people signed in on it keep theirs."
            case .remove:
                "The app on this device can no longer sign anybody in; it must be set up again to be used."
            }
        }
        var label: String {
            switch self {
            case .signOut: "Sign out of this device"
            case .remove: "Remove this device"
            }
        }
        var done: String {
            switch self {
            case .signOut: "signed_out"
            case .remove: "removed"
            }
        }
    }

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("account") { request, context in try await show(request, context) }
        group.get("account/clients/:client_id/sign-out") { request, context in
            try await confirm(.signOut, request, context)
        }
        group.post("account/clients/:client_id/sign-out") { request, context in
            try await perform(.signOut, request, context)
        }
        group.get("account/clients/:client_id/remove") { request, context in
            try await confirm(.remove, request, context)
        }
        group.post("account/clients/:client_id/remove") { request, context in
            try await perform(.remove, request, context)
        }
    }

    static let notices = [
        "signed_out": "You are signed out of that device.", "removed": "The device was removed.",
    ]

    func show(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        struct Listed: Sendable {
            var username: String?
            var devices: [AccountDevices.Device]
        }
        let listed: Listed? = try await database.withTenantTransaction(tenant.id) { connection in
            guard let session = try await sessions.current(cookie, on: connection, logger: logger) else { return nil }
            return Listed(
                username: try await username(session.userID, on: connection),
                devices: try await devices.list(user: session.userID, on: connection, logger: logger))
        }
        let base = "/t/\(tenant.id)"
        var values: [String: Any] = [
            "signedIn": listed != nil, "signInURL": "\(base)/account/login", "passwordURL": "\(base)/account/password",
            "signOutEverywhereURL": "\(base)/logout",
        ]
        values["notice"] = request.uri.queryParameters["done"].flatMap { Self.notices[String($0)] }
        values["username"] = listed?.username
        values["devices"] = (listed?.devices ?? []).map { device -> [String: Any] in
            let path = "\(base)/account/clients/" + AuthorizationResponseTarget.encode(device.clientID)
            let state = device.signedIn ? "signed in" : "signed out"
            var row: [String: Any] = [
                "name": device.name ?? device.clientID, "registered": Self.format(device.registeredAt),
                "lastUsed": device.lastUsedAt.map(Self.format) ?? "never",
                "statusText": device.status == "active" ? state : device.status,
                "registeredByYou": device.registeredByYou,
                "canSignOut": Self.allows(.signOut, device) && device.signedIn,
                "canRemove": Self.allows(.remove, device),
                "signOutURL": path + "/sign-out", "removeURL": path + "/remove",
            ]
            row["softwareID"] = device.softwareID
            return row
        }
        return pages.page("account", title: "Your devices", tenant: tenant, values: values)
    }

    /// The confirmation page of one action (sets the CSRF cookie when the browser has none).
    func confirm(_ action: Action, _ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        let device: AccountDevices.Device? = try await database.withTenantTransaction(tenant.id) { connection in
            guard let session = try await sessions.current(cookie, on: connection, logger: logger) else { return nil }
            return try await devices.find(clientID, user: session.userID, on: connection, logger: logger)
        }
        guard let device, Self.allows(action, device) else { return unavailable(tenant) }
        let (csrfCookie, isNew) = csrf.cookieValue(from: request.cookies[CSRFGuard.cookieName]?.value)
        let path = "/t/\(tenant.id)/account/clients/\(AuthorizationResponseTarget.encode(clientID))/\(action.rawValue)"
        var response = pages.page(
            "account-confirm", title: action.label, tenant: tenant,
            values: [
                "action": path, "csrfToken": csrf.token(for: csrfCookie, tenant: tenant.id),
                "question": "\(action.question) (\(device.name ?? device.clientID))", "consequence": action.consequence,
                "confirmLabel": action.label, "backURL": "/t/\(tenant.id)/account",
            ])
        if isNew {
            response.setCookie(
                Cookie(
                    name: CSRFGuard.cookieName, value: csrfCookie, path: "/t/\(tenant.id)",
                    secure: settings.publicURL.lowercased().hasPrefix("https://"), httpOnly: true, sameSite: .strict))
        }
        return response
    }

    /// The confirmed action; 303 back to the account page.
    func perform(_ action: Action, _ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        // The form carries only its CSRF token: the action and the device are in the path.
        if case .refused(let page) = try await pages.postedForm(
            request, tenant: tenant, csrf: csrf, from: "your account page")
        {
            return page
        }
        let cookie = request.cookies[SSOSessions.cookieName]?.value
        let logger = database.logger
        let done: Bool = try await database.withTenantTransaction(tenant.id) { connection in
            guard let session = try await sessions.current(cookie, on: connection, logger: logger),
                let device = try await devices.find(clientID, user: session.userID, on: connection, logger: logger),
                Self.allows(action, device)
            else { return false }
            switch action {
            case .signOut:
                _ = try await devices.signOut(
                    user: session.userID, clientID: clientID, tenant: tenant.slug, on: connection, logger: logger)
                return true
            case .remove:
                return try await devices.remove(
                    user: session.userID, clientID: clientID, tenant: tenant, on: connection, logger: logger)
            }
        }
        guard done else { return unavailable(tenant) }
        return Response(
            status: .seeOther,
            headers: [
                .location: "/t/\(tenant.id)/account?done=\(action.done)", .cacheControl: "no-store",
                .pragma: "no-cache",
            ])
    }

    static func allows(_ action: Action, _ device: AccountDevices.Device) -> Bool {
        guard device.status == "active" else { return false }
        return action == .signOut || device.registeredByYou
    }

    private func unavailable(_ tenant: ResolvedTenant) -> Response {
        pages.error(
            "This device is not one you can change here, or you are no longer signed in. Open your account page again.",
            tenant: tenant, status: .notFound)
    }

    private func username(_ userID: UUID, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query(
            "SELECT username FROM users WHERE user_id = \(userID)", logger: database.logger)
        for try await name in rows.decode(String.self) { return name }
        return nil
    }

    /// `2026-05-01 09:30:00 UTC`.
    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date).replacingOccurrences(of: "T", with: " ")
            .replacingOccurrences(of: "Z", with: " UTC")
    }
}
