import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// The admin page's sign-in: who may sign in, the session cookie, throttling, expiry and tenant binding.
@Suite struct AdminPageSignInTests {
    @Test func onlyActiveAdminClientsWithTheRightSecretSignIn() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        let notAdmin = try await h.createAdminClient(scope: "openid dcr")
        let revoked = try await h.createAdminClient(status: "revoked")
        try await GatewayHarness.withApp { client in
            var browser = PageBrowser(client)
            let anonymous = try await browser.get("/admin/t/\(h.tenant)")
            #expect(anonymous.status == 303)
            #expect(anonymous.location == "/admin/t/\(h.tenant)/sign-in")

            let form = try await browser.get("/admin/t/\(h.tenant)/sign-in")
            #expect(form.status == 200)
            Self.expectPageSecurityHeaders(form)
            #expect(
                form.body.contains(#"<label for="client_id">"#) && form.body.contains(#"<label for="client_secret">"#))
            let csrfCookie = try #require(form.setCookie(AdminPageController.csrfCookieName))
            Self.expectHostCookie(csrfCookie)

            for (id, secret) in [
                (admin.id, "wrong-secret"), (notAdmin.id, notAdmin.secret), (revoked.id, revoked.secret),
                ("no-such-client", admin.secret),
            ] {
                let refused = try await browser.signInAdmin(tenant: h.tenant, clientID: id, secret: secret)
                #expect(refused.status == 401, "\(id) signed in")
                #expect(refused.setCookie(AdminSessions.cookieName) == nil)
                #expect(refused.body.contains("Invalid client ID or secret"))
            }

            let signedIn = try await browser.signInAdmin(tenant: h.tenant, clientID: admin.id, secret: admin.secret)
            #expect(signedIn.status == 303)
            #expect(signedIn.location == "/admin/t/\(h.tenant)")
            let line = try #require(signedIn.setCookie(AdminSessions.cookieName))
            Self.expectHostCookie(line)
            #expect(line.contains("Max-Age=28800"))
            let sessionID = try #require(browser.cookies[AdminSessions.cookieName])
            // Only the keyed hash is stored.
            let stored = try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    let rows = try await connection.query(
                        "SELECT session_hash, client_id FROM admin_sessions", logger: database.logger)
                    var all: [(String, String)] = []
                    for try await row in rows.decode((String, String).self) { all.append(row) }
                    return all
                }
            }
            #expect(stored.map(\.0) == [GatewayHarness.hasher.hash(sessionID)])
            #expect(stored.map(\.1) == [admin.id])

            let page = try await browser.get("/admin/t/\(h.tenant)")
            #expect(page.status == 200)
            Self.expectPageSecurityHeaders(page)
            #expect(page.body.contains("Signed in as \(admin.id)"))
            // Signed in, the sign-in page leads to the list.
            #expect(try await browser.get("/admin/t/\(h.tenant)/sign-in").location == "/admin/t/\(h.tenant)")

            // Sign-out needs the CSRF token, ends the session and clears the cookie.
            #expect(try await browser.post("/admin/t/\(h.tenant)/sign-out", form: []).status == 403)
            let token = try await browser.adminCSRFToken(tenant: h.tenant)
            let out = try await browser.post("/admin/t/\(h.tenant)/sign-out", form: [("csrf_token", token)])
            #expect(out.status == 303)
            #expect(out.location == "/admin/t/\(h.tenant)/sign-in")
            #expect(browser.cookies[AdminSessions.cookieName] == nil)
            browser.cookies[AdminSessions.cookieName] = sessionID
            #expect(try await browser.get("/admin/t/\(h.tenant)").status == 303, "the ended session still works")
        }
    }

    @Test func signInWithoutTheFormsCSRFTokenIsRefused() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        try await GatewayHarness.withApp { client in
            var browser = PageBrowser(client)
            _ = try await browser.get("/admin/t/\(h.tenant)/sign-in")
            for token in [nil, "forged", String(repeating: "A", count: 43)] as [String?] {
                var form = [("client_id", admin.id), ("client_secret", admin.secret)]
                if let token { form.append(("csrf_token", token)) }
                let refused = try await browser.post("/admin/t/\(h.tenant)/sign-in", form: form)
                #expect(refused.status == 403)
                #expect(refused.setCookie(AdminSessions.cookieName) == nil)
            }
        }
    }

    @Test func repeatedFailuresLockTheClientOutEvenWithTheRightSecret() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        try await GatewayHarness.withApp { client in
            var browser = PageBrowser(client)
            for _ in 0..<LoginThrottle().accountThreshold {
                #expect(
                    try await browser.signInAdmin(tenant: h.tenant, clientID: admin.id, secret: "guess").status == 401)
            }
            let locked = try await browser.signInAdmin(tenant: h.tenant, clientID: admin.id, secret: admin.secret)
            #expect(locked.status == 429)
            #expect(Int(locked.header("Retry-After") ?? "") ?? 0 > 0)
            #expect(locked.setCookie(AdminSessions.cookieName) == nil)
        }
    }

    @Test func expiredOrIdleSessionsLeadBackToTheSignIn() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        try await GatewayHarness.withApp { client in
            for aging in ["expires_at = now() - interval '1 second'", "last_seen_at = now() - interval '31 minutes'"] {
                var browser = try await h.signedInBrowser(client, as: admin)
                #expect(try await browser.get("/admin/t/\(h.tenant)").status == 200)
                try await h.updateAdminSessions("UPDATE admin_sessions SET \(aging) WHERE ended_at IS NULL")
                let expired = try await browser.get("/admin/t/\(h.tenant)")
                #expect(expired.status == 303, "\(aging)")
                #expect(expired.location == "/admin/t/\(h.tenant)/sign-in")
            }
        }
    }

    @Test func aSessionStaysInItsTenantUnlessItIsAPlatformAdmins() async throws {
        let a = try await GatewayHarness.make()
        let b = try await GatewayHarness.make()
        let platform = try await GatewayHarness.make()
        let adminA = try await a.createAdminClient()
        let platformAdmin = try await platform.createAdminClient()
        try await GatewayHarness.withApp(platformTenant: platform.tenant) { client in
            var browser = PageBrowser(client)
            #expect(
                try await browser.signInAdmin(tenant: a.tenant, clientID: adminA.id, secret: adminA.secret).status
                    == 303)
            let crossing = try await browser.get("/admin/t/\(b.tenant)")
            #expect(crossing.status == 303)
            #expect(crossing.location == "/admin/t/\(b.tenant)/sign-in")
            // A's admin client is no admin of B.
            #expect(
                try await browser.signInAdmin(tenant: b.tenant, clientID: adminA.id, secret: adminA.secret).status
                    == 401)

            // A platform admin signs in at the platform tenant and may look at B, or sign in at B directly.
            var platformOperator = PageBrowser(client)
            #expect(
                try await platformOperator.signInAdmin(
                    tenant: platform.tenant, clientID: platformAdmin.id, secret: platformAdmin.secret
                ).status == 303)
            let other = try await platformOperator.get("/admin/t/\(b.tenant)")
            #expect(other.status == 200)
            #expect(other.body.contains("Instances of \(b.tenant)"))
            var direct = PageBrowser(client)
            #expect(
                try await direct.signInAdmin(tenant: b.tenant, clientID: platformAdmin.id, secret: platformAdmin.secret)
                    .status == 303)
            #expect(try await direct.get("/admin/t/\(b.tenant)").status == 200)
        }
    }

    static func expectPageSecurityHeaders(_ page: PageResponse) {
        let csp = page.header("Content-Security-Policy") ?? ""
        for directive in [
            "default-src 'none'", "style-src 'sha256-", "form-action 'self'", "frame-ancestors 'none'",
            "base-uri 'none'",
        ] {
            #expect(csp.contains(directive), "CSP lacks \(directive): \(csp)")
        }
        #expect(!csp.contains("script-src") && !csp.contains("unsafe-inline"))
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        #expect(page.header("Referrer-Policy") == "no-referrer")
        #expect(page.header("Cache-Control") == "no-store")
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
    }

    static func expectHostCookie(_ line: String) {
        let attributes = Set(
            line.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        for required in ["path=/", "secure", "httponly", "samesite=strict"] {
            #expect(attributes.contains(required), "\(line) lacks \(required)")
        }
        #expect(!attributes.contains { $0.hasPrefix("domain=") })
    }
}
