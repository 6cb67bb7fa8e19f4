import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// OpenID Connect RP-Initiated Logout at `/t/{tenant}/logout`.
@Suite struct LogoutTests {
    static let logoutURI = "com.example.app:/logout"

    /// A signed-in browser, its app (with a registered post-logout redirect URI) and the ID token it got.
    static func signedIn(_ client: any TestClientProtocol, _ fixture: TokenServiceHarness) async throws
        -> (browser: PageBrowser, app: NativeApp, idToken: String)
    {
        let app = try await fixture.insertPublicApp()
        try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
            try await connection.query(
                """
                UPDATE clients SET metadata = jsonb_set(metadata, '{post_logout_redirect_uris}', \(#"[""# + logoutURI + #""]"#)::jsonb)
                WHERE client_id = \(app.clientID)
                """, logger: fixture.database.logger)
        }
        try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
        var browser = PageBrowser(client)
        let verifier = PKCE.generateVerifier()
        let redirect = try await AuthorizeFlowTests.signIn(&browser, fixture, app: app, verifier: verifier)
        let code = try #require(redirect.redirectParameters["code"])
        let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
        #expect(status == 200, "\(json)")
        return (browser, app, try #require(json["id_token"] as? String))
    }

    static func promptNone(_ browser: inout PageBrowser, _ fixture: TokenServiceHarness, app: NativeApp)
        async throws -> PageResponse
    {
        try await browser.get(
            AuthorizeRequest.path(
                fixture, clientID: app.clientID, verifier: PKCE.generateVerifier(), extra: [("prompt", "none")]))
    }

    @Test func discoveryAdvertisesTheEndSessionEndpoint() async throws {
        try await TokenServiceHarness.run { client, fixture in
            try await client.execute(uri: "/t/\(fixture.tenant)/.well-known/openid-configuration", method: .get) {
                let json = TestJSON.object($0.body.readableBytesView)
                #expect(json["end_session_endpoint"] as? String == "\(fixture.issuer)/logout")
            }
        }
    }

    @Test func validHintEndsTheSessionAndRedirectsWithState() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, app, idToken) = try await Self.signedIn(client, fixture)
            #expect(try await Self.promptNone(&browser, fixture, app: app).redirectParameters["code"] != nil)
            let query = AuthorizeRequest.query([
                ("id_token_hint", idToken), ("post_logout_redirect_uri", Self.logoutURI), ("state", "bye 1"),
            ])
            let logout = try await browser.get("/t/\(fixture.tenant)/logout?\(query)")
            #expect(logout.status == 302, "\(logout.body)")
            #expect(logout.location == Self.logoutURI + "?state=bye%201")
            #expect(logout.setCookie(SSOSessions.cookieName)?.contains("Max-Age=0") == true)
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE revoked_at IS NULL") == 0)
            let none = try await Self.promptNone(&browser, fixture, app: app)
            #expect(none.redirectParameters["error"] == "login_required")
        }
    }

    @Test func anEndedSessionCookieNoLongerSignsIn() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, app, idToken) = try await Self.signedIn(client, fixture)
            let cookie = try #require(browser.cookies[SSOSessions.cookieName])
            let logout = try await browser.get(
                "/t/\(fixture.tenant)/logout?" + AuthorizeRequest.query([("id_token_hint", idToken)]))
            #expect(logout.status == 200)
            #expect(logout.body.contains("You are signed out"))
            // A copy of the cookie taken before the logout (another tab, a thief) is dead too.
            var copy = PageBrowser(client)
            copy.cookies[SSOSessions.cookieName] = cookie
            let none = try await Self.promptNone(&copy, fixture, app: app)
            #expect(none.redirectParameters["error"] == "login_required")
        }
    }

    @Test func withoutAValidHintTheUserConfirms() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, app, idToken) = try await Self.signedIn(client, fixture)
            // A tampered hint counts as none.
            let forged = String(idToken.dropLast(4)) + "AAAA"
            let query = AuthorizeRequest.query([
                ("id_token_hint", forged), ("client_id", app.clientID),
                ("post_logout_redirect_uri", Self.logoutURI), ("state", "s-9"),
            ])
            let page = try await browser.get("/t/\(fixture.tenant)/logout?\(query)")
            #expect(page.status == 200, "\(page.body)")
            #expect(page.body.contains("Do you want to sign out"))
            #expect(page.header("X-Frame-Options") == "DENY")
            let csp = try #require(page.header("Content-Security-Policy"))
            #expect(csp.contains("form-action 'self' com.example.app:"))
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE revoked_at IS NULL") == 1)

            var form: [(String, String)] = [
                ("client_id", app.clientID), ("post_logout_redirect_uri", Self.logoutURI), ("state", "s-9"),
            ]
            let noToken = try await browser.post("/t/\(fixture.tenant)/logout/confirm", form: form)
            #expect(noToken.status == 403)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE revoked_at IS NULL") == 1)

            form.append(("csrf_token", try #require(page.field("csrf_token"))))
            let confirmed = try await browser.post("/t/\(fixture.tenant)/logout/confirm", form: form)
            #expect(confirmed.status == 302, "\(confirmed.body)")
            #expect(confirmed.location == Self.logoutURI + "?state=s-9")
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE revoked_at IS NULL") == 0)
            #expect(
                try await Self.promptNone(&browser, fixture, app: app).redirectParameters["error"] == "login_required")
        }
    }

    @Test func anUnregisteredPostLogoutRedirectURIGetsNoRedirectAndEndsNothing() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, app, idToken) = try await Self.signedIn(client, fixture)
            for (uri, extra) in [
                ("https://attacker.example/bye", [("id_token_hint", idToken)]),
                (Self.logoutURI + "/x", [("id_token_hint", idToken)]),
                (Self.logoutURI, [("client_id", "someone-else")]),
                (Self.logoutURI, [(String, String)]()),
            ] {
                let query = AuthorizeRequest.query(extra + [("post_logout_redirect_uri", uri), ("state", "x")])
                let page = try await browser.get("/t/\(fixture.tenant)/logout?\(query)")
                #expect(page.status == 400, "\(uri) \(extra.map(\.0))")
                #expect(page.location == nil)
            }
            // The hint's audience and client_id must agree.
            let mismatch = try await browser.get(
                "/t/\(fixture.tenant)/logout?"
                    + AuthorizeRequest.query([("id_token_hint", idToken), ("client_id", "other")]))
            #expect(mismatch.status == 400)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE revoked_at IS NULL") == 1)
            #expect(try await Self.promptNone(&browser, fixture, app: app).redirectParameters["code"] != nil)
        }
    }

    @Test func anAccessTokenIsNotAnIDTokenHint() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, app, _) = try await Self.signedIn(client, fixture)
            let verifier = PKCE.generateVerifier()
            let silent = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier))
            let code = try #require(silent.redirectParameters["code"])
            let (_, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            let access = try #require(json["access_token"] as? String)
            let page = try await browser.get(
                "/t/\(fixture.tenant)/logout?" + AuthorizeRequest.query([("id_token_hint", access)]))
            #expect(page.status == 200)
            #expect(page.body.contains("Do you want to sign out"))
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE revoked_at IS NULL") == 1)
        }
    }
}
