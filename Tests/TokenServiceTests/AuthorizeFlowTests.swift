import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// The browser side of the code flow: /authorize, the sign-in and sign-up pages, SSO, then /token.
@Suite struct AuthorizeFlowTests {
    static let password = "correct horse 42 battery"

    /// GET /authorize → sign-in page → POST credentials; returns the redirect.
    static func signIn(
        _ browser: inout PageBrowser, _ fixture: TokenServiceHarness, app: NativeApp, verifier: String,
        username: String = "alice", password: String = AuthorizeFlowTests.password, extra: [(String, String)] = []
    ) async throws -> PageResponse {
        let page = try await browser.get(
            AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, extra: extra))
        #expect(page.status == 200, "\(page.body)")
        return try await browser.post(
            "/t/\(fixture.tenant)/login",
            form: [
                ("csrf_token", try #require(page.field("csrf_token"))),
                ("authorization_request", try #require(page.field("authorization_request"))),
                ("username", username), ("password", password),
            ])
    }

    @Test func signInRedirectsWithCodeStateAndIssThenTokensAreIssued() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            let user = try await fixture.insertUser(username: "alice", password: Self.password)
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let page = try await browser.get(AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier))
            #expect(page.status == 200)
            #expect(page.body.contains("<label for=\"username\">") && page.body.contains("<label for=\"password\">"))
            let csp = try #require(page.header("Content-Security-Policy"))
            #expect(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"))
            #expect(csp.contains("form-action 'self' com.example.app:") && csp.contains("base-uri 'none'"))
            #expect(csp.contains("style-src 'sha256-"))
            #expect(page.header("X-Frame-Options") == "DENY")
            #expect(page.header("Cache-Control") == "no-store")
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            #expect(browser.cookies[CSRFGuard.cookieName] != nil)

            let redirect = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [
                    ("csrf_token", try #require(page.field("csrf_token"))),
                    ("authorization_request", try #require(page.field("authorization_request"))),
                    ("username", "Alice"), ("password", Self.password),
                ])
            #expect(redirect.status == 302, "\(redirect.body)")
            #expect(redirect.location?.hasPrefix("com.example.app:/cb?code=") == true)
            let parameters = redirect.redirectParameters
            #expect(parameters["state"] == "st-123")
            #expect(parameters["iss"] == fixture.issuer)
            let sessionCookie = try #require(redirect.setCookie(SSOSessions.cookieName))
            for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/t/\(fixture.tenant)", "Max-Age=28800"] {
                #expect(sessionCookie.contains(attribute), "\(sessionCookie)")
            }
            let sessionValue = try #require(browser.cookies[SSOSessions.cookieName])
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM sso_sessions WHERE session_hash = '\(sessionValue)'") == 0)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sso_sessions") == 1)

            let code = try #require(parameters["code"])
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM authorization_codes WHERE code_hash = '\(code)'")
                    == 0)
            let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            #expect(json["token_type"] as? String == "DPoP")
            let claims = try await fixture.verifyAccessToken(
                try #require(json["access_token"] as? String), client: client)
            #expect(claims.sub == user.uuidString.lowercased())
            let idClaims = try CompactJWS(parsing: try #require(json["id_token"] as? String)).claims(
                as: IDTokenClaims.self)
            #expect(idClaims.nonce == "n-42")
        }
    }

    @Test func ssoSessionSkipsThePromptUnlessPromptLoginAndPromptNoneNeedsASession() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            let alice = try await fixture.insertUser(username: "alice", password: Self.password)
            var anonymous = PageBrowser(client)
            let none = try await anonymous.get(
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, verifier: PKCE.generateVerifier(), extra: [("prompt", "none")]))
            #expect(none.status == 302)
            #expect(none.redirectParameters["error"] == "login_required")
            #expect(none.redirectParameters["state"] == "st-123")
            #expect(none.redirectParameters["iss"] == fixture.issuer)

            var browser = PageBrowser(client)
            let first = try await Self.signIn(&browser, fixture, app: app, verifier: PKCE.generateVerifier())
            #expect(first.status == 302)
            let firstSession = try #require(browser.cookies[SSOSessions.cookieName])

            // The second sign-in of the mobile flow: the user's own registered instance, no prompt.
            let instance = try await fixture.insertPublicApp("instance-1", firstParty: false, owner: alice)
            let verifier = PKCE.generateVerifier()
            let silent = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: instance.clientID, verifier: verifier))
            #expect(silent.status == 302, "\(silent.body)")
            let code = try #require(silent.redirectParameters["code"])
            let (status, json) = try await instance.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            let silentNone = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, extra: [("prompt", "none")]))
            #expect(silentNone.redirectParameters["code"] != nil)

            let forced = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, extra: [("prompt", "login")])
            )
            #expect(forced.status == 200)
            #expect(forced.field("csrf_token") != nil)

            // Signing in again rotates the session: the old cookie value stops working.
            let again = try await Self.signIn(
                &browser, fixture, app: app, verifier: verifier, extra: [("prompt", "login")])
            #expect(again.status == 302)
            #expect(browser.cookies[SSOSessions.cookieName] != firstSession)
            var stale = PageBrowser(client)
            stale.cookies[SSOSessions.cookieName] = firstSession
            let staleTry = try await stale.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier))
            #expect(staleTry.status == 200)
        }
    }

    @Test func signUpCreatesTheUserEmitsUserRegisteredAndContinues() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let signIn = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier))
            let link = try #require(signIn.body.range(of: "href=\"/t/\(fixture.tenant)/signup?authorization_request="))
            let href = String(signIn.body[link.lowerBound...].dropFirst(6).prefix { $0 != "\"" })
            let page = try await browser.get(href)
            #expect(page.status == 200)
            for field in ["username", "email", "password"] { #expect(page.body.contains("<label for=\"\(field)\">")) }
            func submit(_ username: String, _ email: String, _ password: String) async throws -> PageResponse {
                try await browser.post(
                    "/t/\(fixture.tenant)/signup",
                    form: [
                        ("csrf_token", try #require(page.field("csrf_token"))),
                        ("authorization_request", try #require(page.field("authorization_request"))),
                        ("username", username), ("email", email), ("password", password),
                    ])
            }
            let short = try await submit("bob", "bob@example.test", "Short1!")
            #expect(short.status == 400)
            #expect(short.body.contains("at least 12 characters"))
            #expect(short.body.contains("value=\"bob@example.test\""))
            let oneClass = try await submit("bob", "bob@example.test", "aaaaaaaaaaaaaaaa")
            #expect(oneClass.body.contains("kinds of characters"))
            let sameAsName = try await submit("bob-the-builder", "bob@example.test", "Bob-The-Builder")
            #expect(sameAsName.body.contains("must not be your username"))
            let badEmail = try await submit("bob", "not-an-email", Self.password)
            #expect(badEmail.body.contains("valid email"))

            let created = try await submit("bob", "bob@example.test", Self.password)
            #expect(created.status == 302, "\(created.body)")
            let code = try #require(created.redirectParameters["code"])
            let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM users WHERE username = 'bob' AND password_hash LIKE 'scrypt$%'") == 1)
            let payloads = try await fixture.outboxPayloads(type: .userRegistered)
            #expect(payloads.count == 1)
            let event = try CloudEvent<UserRegistered>.decode(from: Data(payloads[0].utf8))
            #expect(
                event.data.username == "bob" && event.data.method == .password && event.data.clientID == app.clientID)
            #expect(!payloads[0].contains(Self.password) && !payloads[0].contains("bob@example.test"))
            let envelope = try StrictJSONParser.parse(Array(payloads[0].utf8))
            #expect(try EventSchemaValidator().firstError(in: envelope, as: .userRegistered) == nil)

            let taken = try await submit("BOB", "other@example.test", Self.password)
            #expect(taken.status == 400)
            #expect(taken.body.contains("not available"))
        }
    }
}
