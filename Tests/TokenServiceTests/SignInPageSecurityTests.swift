import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// CSRF, throttling, enumeration safety and hostile input on the sign-in and sign-up pages.
@Suite struct SignInPageSecurityTests {
    /// The sign-in page of a fresh authorization request.
    static func signInPage(_ browser: inout PageBrowser, _ fixture: TokenServiceHarness, app: NativeApp)
        async throws -> (csrf: String, request: String)
    {
        let page = try await browser.get(
            AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: PKCE.generateVerifier()))
        return (try #require(page.field("csrf_token")), try #require(page.field("authorization_request")))
    }

    @Test func missingOrWrongCSRFTokenIsRefused() async throws {
        try await TokenServiceHarness.run { client, fixture in
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
                "/t/\(fixture.tenant)/login",
                form: [("csrf_token", csrf), ("authorization_request", request)] + credentials)
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

    /// Loopback is the "ingress" in these tests, so `X-Forwarded-For` picks the client address.
    static func trustLoopback(_ settings: inout TokenServiceSettings) {
        settings.clientAddresses = try! ClientAddressResolver(setting: "127.0.0.1/32, ::1/128")
    }

    /// One sign-in post from `source` (sent as `X-Forwarded-For`, believed only from a trusted peer).
    static func attempt(
        _ browser: inout PageBrowser, _ fixture: TokenServiceHarness, page: (csrf: String, request: String),
        _ username: String, _ password: String, from source: String? = nil
    ) async throws -> PageResponse {
        browser.extraHeaders = source.map { [HTTPField.Name("X-Forwarded-For")!: "198.51.100.99, \($0)"] } ?? [:]
        return try await browser.post(
            "/t/\(fixture.tenant)/login",
            form: [
                ("csrf_token", page.csrf), ("authorization_request", page.request), ("username", username),
                ("password", password),
            ])
    }

    @Test func repeatedFailuresDelayOnlyThatAccountAndSourceProgressively() async throws {
        try await TokenServiceHarness.run(setup: .live, configure: Self.trustLoopback) { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let page = try await Self.signInPage(&browser, fixture, app: app)
            let attacker = "203.0.113.7"
            let user = "203.0.113.8"
            let unknown = try await Self.attempt(
                &browser, fixture, page: page, "nobody", "whatever-password-1", from: attacker)
            let wrong = try await Self.attempt(
                &browser, fixture, page: page, "alice", "wrong-password-1", from: attacker)
            #expect(unknown.status == 401 && wrong.status == 401)
            #expect(unknown.body.contains(AuthorizationController.genericFailure))
            #expect(wrong.body.contains(AuthorizationController.genericFailure))
            // Three free failures, the fourth starts a delay for this account and address only.
            for _ in 0..<3 {
                #expect(
                    try await Self.attempt(&browser, fixture, page: page, "alice", "wrong-password-2", from: attacker)
                        .status == 401)
            }
            let delayed = try await Self.attempt(
                &browser, fixture, page: page, "alice", AuthorizeFlowTests.password, from: attacker)
            #expect(delayed.status == 429)
            #expect((1...5).contains(try #require(delayed.header("Retry-After").flatMap(Int.init))))
            // Each further failure doubles the delay.
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    "UPDATE sign_in_sources SET retry_at = now()", logger: fixture.database.logger)
            }
            #expect(
                try await Self.attempt(&browser, fixture, page: page, "alice", "wrong-password-3", from: attacker)
                    .status == 401)
            let longer = try await Self.attempt(
                &browser, fixture, page: page, "alice", "wrong-password-3", from: attacker)
            #expect(longer.status == 429)
            #expect((6...10).contains(try #require(longer.header("Retry-After").flatMap(Int.init))))
            // No lockout: the user signs in from their own address meanwhile.
            let signedIn = try await Self.attempt(
                &browser, fixture, page: page, "alice", AuthorizeFlowTests.password, from: user)
            #expect(signedIn.status == 302)
            // Counters live in PostgreSQL, keyed by the typed name (known or not) and the address.
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM sign_in_sources WHERE account = 'nobody' AND source = '\(attacker)'")
                    == 1)
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM sign_in_sources WHERE account = 'alice' AND succeeded_at IS NOT NULL")
                    == 1)
        }
    }

    /// Over real sockets from an untrusted peer: `X-Forwarded-For` does not change the source.
    @Test func spoofedForwardedForFromAnUntrustedPeerIsIgnored() async throws {
        try await TokenServiceHarness.run(setup: .live) { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let page = try await Self.signInPage(&browser, fixture, app: app)
            for index in 0..<4 {
                let response = try await Self.attempt(
                    &browser, fixture, page: page, "alice", "guess-1234", from: "10.0.0.\(index)")
                #expect(response.status == 401)
            }
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM sign_in_sources WHERE source = '127.0.0.1'") == 1)
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM sign_in_sources WHERE source <> '127.0.0.1'") == 0)
            // The fourth failure delayed the real peer. Its few seconds are stretched, so that a slow machine
            // between the two requests cannot let the delay run out before the next attempt.
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM sign_in_sources WHERE source = '127.0.0.1' AND retry_at > now() - interval '1 minute'"
                ) == 1)
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    "UPDATE sign_in_sources SET retry_at = now() + interval '10 minutes' WHERE source = '127.0.0.1'",
                    logger: fixture.database.logger)
            }
            let blocked = try await Self.attempt(
                &browser, fixture, page: page, "alice", AuthorizeFlowTests.password, from: "10.0.0.99")
            #expect(blocked.status == 429)
            #expect(blocked.header("Retry-After") != nil)
        }
    }

    @Test func hostileInputIsEscapedBoundedAndNeverA500() async throws {
        try await TokenServiceHarness.run(
            policy: #"{"branding":{"name":"<b>Acme</b>","primary_color":"red;}</style><script>"}}"#
        ) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let page = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, verifier: PKCE.generateVerifier(),
                    state: "<script>alert(1)</script>"))
            #expect(page.status == 200)
            #expect(!page.body.contains("<script>"))
            #expect(page.body.contains("&lt;b&gt;Acme&lt;/b&gt;"))
            #expect(!page.body.contains("red;}"))
            let csrf = try #require(page.field("csrf_token"))
            let request = try #require(page.field("authorization_request"))
            let xss = "\"><script>alert(1)</script>"
            let reflected = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [
                    ("csrf_token", csrf), ("authorization_request", request), ("username", xss),
                    ("password", "x-password-1"),
                ])
            #expect(reflected.status == 401)
            #expect(!reflected.body.contains("<script>"))
            #expect(reflected.body.contains("&quot;&gt;&lt;script&gt;"))
            let signUp = try await browser.post(
                "/t/\(fixture.tenant)/signup",
                form: [
                    ("csrf_token", csrf), ("authorization_request", request), ("username", "ok"),
                    ("email", xss + "@x.y"), ("password", "pw"),
                ])
            #expect(signUp.status == 400 && !signUp.body.contains("<script>"))

            let oversizedName = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [
                    ("csrf_token", csrf), ("authorization_request", request),
                    ("username", String(repeating: "u", count: 5000)), ("password", "p"),
                ])
            #expect(oversizedName.status == 400)
            let repeated = try await browser.send(
                "/t/\(fixture.tenant)/login", method: .post,
                body: ByteBuffer(string: "csrf_token=\(csrf)&csrf_token=\(csrf)&authorization_request=\(request)"))
            #expect(repeated.status == 400 && repeated.header("Content-Type") == "text/html; charset=utf-8")
            let notUTF8 = try await browser.send(
                "/t/\(fixture.tenant)/login", method: .post,
                body: ByteBuffer(string: "csrf_token=\(csrf)&username=%C3%28"))
            #expect(notUTF8.status == 400)
            let json = try await browser.send(
                "/t/\(fixture.tenant)/login", method: .post, body: ByteBuffer(string: "{}"),
                contentType: "application/json")
            #expect(json.status == 415)
            let huge = try await browser.send(
                "/t/\(fixture.tenant)/signup", method: .post,
                body: ByteBuffer(string: "a=" + String(repeating: "x", count: 70_000)))
            #expect(huge.status == 413)
            let postAuthorize = try await browser.send(
                "/t/\(fixture.tenant)/authorize", method: .post,
                body: TokenRequest.form([
                    ("client_id", app.clientID), ("redirect_uri", "com.example.app:/cb"), ("response_type", "code"),
                ]))
            #expect(postAuthorize.status == 302)
            #expect(postAuthorize.redirectParameters["error"] == "invalid_request")
        }
    }
}
