import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyTestSupport
import PostgresNIO
import Shared
import Testing
@testable import TokenService

/// CSRF, throttling, enumeration safety and hostile input on the sign-in and sign-up pages.
@Suite struct SignInPageSecurityTests {
    /// The sign-in page of a fresh authorization request.
    static func signInPage(_ browser: inout PageBrowser, _ fixture: TokenServiceFixture, app: NativeApp)
        async throws -> (csrf: String, request: String)
    {
        let page = try await browser.get(AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: PKCE.generateVerifier()))
        return (try #require(page.field("csrf_token")), try #require(page.field("authorization_request")))
    }

    @Test func missingOrWrongCSRFTokenIsRefused() async throws {
        try await TokenServiceFixture.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let (csrf, request) = try await Self.signInPage(&browser, fixture, app: app)
            let credentials = [("username", "alice"), ("password", AuthorizeFlowTests.password)]
            for path in ["login", "signup"] {
                let noToken = try await browser.post(
                    "/t/\(fixture.tenant)/\(path)", form: [("authorization_request", request)] + credentials)
                #expect(noToken.status == 403)
                let wrong = try await browser.post(
                    "/t/\(fixture.tenant)/\(path)",
                    form: [("csrf_token", String(csrf.reversed())), ("authorization_request", request)] + credentials)
                #expect(wrong.status == 403)
            }
            // The right token without the cookie it belongs to (a cross-site form post) fails too.
            var other = PageBrowser(client)
            let forged = try await other.post(
                "/t/\(fixture.tenant)/login", form: [("csrf_token", csrf), ("authorization_request", request)] + credentials)
            #expect(forged.status == 403)
            #expect(forged.location == nil)
            // A tampered or foreign sealed request is refused.
            var tampered = Array(request)
            tampered[20] = tampered[20] == "A" ? "B" : "A"
            let altered = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [("csrf_token", csrf), ("authorization_request", String(tampered))] + credentials)
            #expect(altered.status == 400 && altered.location == nil)
            let unsealed = try await browser.get("/t/\(fixture.tenant)/signup?authorization_request=garbage")
            #expect(unsealed.status == 400)
        }
    }

    @Test func repeatedFailuresLockTheAccountWithBackoffAndMessagesAreGeneric() async throws {
        try await TokenServiceFixture.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let (csrf, request) = try await Self.signInPage(&browser, fixture, app: app)
            func attempt(_ username: String, _ password: String) async throws -> PageResponse {
                try await browser.post(
                    "/t/\(fixture.tenant)/login",
                    form: [("csrf_token", csrf), ("authorization_request", request), ("username", username), ("password", password)])
            }
            let unknown = try await attempt("nobody", "whatever-password-1")
            let wrong = try await attempt("alice", "wrong-password-1")
            #expect(unknown.status == 401 && wrong.status == 401)
            #expect(unknown.body.contains(AuthorizationController.genericFailure))
            #expect(wrong.body.contains(AuthorizationController.genericFailure))
            for _ in 0..<4 { #expect(try await attempt("alice", "wrong-password-2").status == 401) }
            // Five failures in the window: locked, even with the right password.
            let locked = try await attempt("alice", AuthorizeFlowTests.password)
            #expect(locked.status == 429)
            let retryAfter = try #require(locked.header("Retry-After").flatMap(Int.init))
            #expect((1...60).contains(retryAfter))
            // The next lockout doubles (exponential backoff).
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query("UPDATE login_attempts SET locked_until = now() WHERE kind = 'account'", logger: fixture.database.logger)
            }
            for _ in 0..<5 { #expect(try await attempt("alice", "wrong-password-3").status == 401) }
            let again = try await attempt("alice", AuthorizeFlowTests.password)
            #expect(again.status == 429)
            #expect((61...120).contains(try #require(again.header("Retry-After").flatMap(Int.init))))
            // Counters live in PostgreSQL, keyed by the typed name (known or not) and by source.
            #expect(try await fixture.count("SELECT count(*)::int8 FROM login_attempts WHERE kind = 'account' AND subject = 'nobody'") == 1)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM login_attempts WHERE kind = 'source'") == 1)
        }
    }

    /// Over real sockets: the source is the TCP peer, and `X-Forwarded-For` does not change it.
    @Test func manyFailuresFromOneSourceLockThatSource() async throws {
        try await TokenServiceFixture.run(setup: .live) { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let (csrf, request) = try await Self.signInPage(&browser, fixture, app: app)
            // Password spraying: one try per account, many accounts.
            for index in 0..<LoginThrottle().sourceThreshold {
                browser.extraHeaders = [HTTPField.Name("X-Forwarded-For")!: "10.0.0.\(index)"]
                let response = try await browser.post(
                    "/t/\(fixture.tenant)/login",
                    form: [("csrf_token", csrf), ("authorization_request", request), ("username", "user\(index)"), ("password", "guess-1234")])
                #expect(response.status == 401)
            }
            #expect(try await fixture.count("SELECT count(*)::int8 FROM login_attempts WHERE kind = 'source' AND subject = '127.0.0.1'") == 1)
            let blocked = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [("csrf_token", csrf), ("authorization_request", request), ("username", "alice"), ("password", AuthorizeFlowTests.password)])
            #expect(blocked.status == 429)
            #expect(blocked.header("Retry-After") != nil)
        }
    }

    @Test func hostileInputIsEscapedBoundedAndNeverA500() async throws {
        try await TokenServiceFixture.run(policy: #"{"branding":{"name":"<b>Acme</b>","primary_color":"red;}</style><script>"}}"#) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let page = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: PKCE.generateVerifier(), state: "<script>alert(1)</script>"))
            #expect(page.status == 200)
            #expect(!page.body.contains("<script>"))
            #expect(page.body.contains("&lt;b&gt;Acme&lt;/b&gt;"))
            #expect(!page.body.contains("red;}"))
            let csrf = try #require(page.field("csrf_token"))
            let request = try #require(page.field("authorization_request"))
            let xss = "\"><script>alert(1)</script>"
            let reflected = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [("csrf_token", csrf), ("authorization_request", request), ("username", xss), ("password", "x-password-1")])
            #expect(reflected.status == 401)
            #expect(!reflected.body.contains("<script>"))
            #expect(reflected.body.contains("&quot;&gt;&lt;script&gt;"))
            let signUp = try await browser.post(
                "/t/\(fixture.tenant)/signup",
                form: [("csrf_token", csrf), ("authorization_request", request), ("username", "ok"), ("email", xss + "@x.y"), ("password", "pw")])
            #expect(signUp.status == 400 && !signUp.body.contains("<script>"))

            let oversizedName = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [("csrf_token", csrf), ("authorization_request", request), ("username", String(repeating: "u", count: 5000)), ("password", "p")])
            #expect(oversizedName.status == 400)
            let repeated = try await browser.send(
                "/t/\(fixture.tenant)/login", method: .post,
                body: ByteBuffer(string: "csrf_token=\(csrf)&csrf_token=\(csrf)&authorization_request=\(request)"))
            #expect(repeated.status == 400 && repeated.header("Content-Type") == "text/html; charset=utf-8")
            let notUTF8 = try await browser.send(
                "/t/\(fixture.tenant)/login", method: .post, body: ByteBuffer(string: "csrf_token=\(csrf)&username=%C3%28"))
            #expect(notUTF8.status == 400)
            let json = try await browser.send(
                "/t/\(fixture.tenant)/login", method: .post, body: ByteBuffer(string: "{}"), contentType: "application/json")
            #expect(json.status == 415)
            let huge = try await browser.send(
                "/t/\(fixture.tenant)/signup", method: .post, body: ByteBuffer(string: "a=" + String(repeating: "x", count: 70_000)))
            #expect(huge.status == 413)
            let postAuthorize = try await browser.send(
                "/t/\(fixture.tenant)/authorize", method: .post,
                body: TokenRequest.form([("client_id", app.clientID), ("redirect_uri", "com.example.app:/cb"), ("response_type", "code")]))
            #expect(postAuthorize.status == 302)
            #expect(postAuthorize.redirectParameters["error"] == "invalid_request")
        }
    }
}
