import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// The tenant's password policy on the pages: sign-up, and a signed-in user changing their password.
@Suite struct PasswordChangePageTests {
    static let password = AuthorizeFlowTests.password
    static let newPassword = "a fresh 77 passphrase"

    static func changeForm(_ page: PageResponse, current: String, new: String, confirm: String? = nil) throws
        -> [(String, String)]
    {
        [
            ("csrf_token", try #require(page.field("csrf_token"))), ("current_password", current),
            ("new_password", new), ("confirm_password", confirm ?? new),
        ]
    }

    @Test func signUpFollowsAPINPolicyAndShowsItsRules() async throws {
        let policy = #"{"password_policy":{"min_length":6,"max_length":6,"digits_only":true,"forbid_sequences":true}}"#
        try await TokenServiceHarness.run(policy: policy) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let signIn = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier))
            let link = try #require(signIn.body.range(of: "href=\"/t/\(fixture.tenant)/signup?authorization_request="))
            let page = try await browser.get(String(signIn.body[link.lowerBound...].dropFirst(6).prefix { $0 != "\"" }))
            #expect(page.body.contains("At least 6 digits") && page.body.contains("no sequences such as 1234"))
            #expect(page.body.contains("minlength=\"6\" maxlength=\"6\""))
            func submit(_ pin: String) async throws -> PageResponse {
                try await browser.post(
                    "/t/\(fixture.tenant)/signup",
                    form: [
                        ("csrf_token", try #require(page.field("csrf_token"))),
                        ("authorization_request", try #require(page.field("authorization_request"))),
                        ("username", "pin-user"), ("email", "pin@example.test"), ("password", pin),
                    ])
            }
            let sequence = try await submit("123456")
            #expect(sequence.status == 400)
            #expect(sequence.body.contains("must not contain a sequence"))
            #expect(sequence.body.contains("too common or not allowed"))
            let letters = try await submit("12ab56")
            #expect(letters.body.contains("digits only"))
            let created = try await submit("839201")
            #expect(created.status == 302, "\(created.body)")
        }
    }

    @Test func aSignedInUserChangesTheirPasswordUnderThePolicy() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            let alice = try await fixture.insertUser(username: "alice", password: Self.password)
            var browser = PageBrowser(client)
            let signedIn = try await AuthorizeFlowTests.signIn(
                &browser, fixture, app: app, verifier: PKCE.generateVerifier())
            #expect(signedIn.status == 302)
            var otherDevice = PageBrowser(client)
            #expect(
                try await AuthorizeFlowTests.signIn(&otherDevice, fixture, app: app, verifier: PKCE.generateVerifier())
                    .status == 302)

            let path = "/t/\(fixture.tenant)/account/password"
            let page = try await browser.get(path)
            #expect(page.status == 200, "\(page.body)")
            #expect(page.body.contains("Signed in as <strong>alice</strong>"))
            for field in ["current-password", "new-password", "confirm-password"] {
                #expect(page.body.contains("<label for=\"\(field)\">"))
            }
            #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
            #expect(page.header("X-Frame-Options") == "DENY")

            let wrong = try await browser.post(
                path, form: try Self.changeForm(page, current: "not it", new: Self.newPassword))
            #expect(wrong.status == 401)
            #expect(wrong.body.contains("current password is not correct"))
            let mismatch = try await browser.post(
                path, form: try Self.changeForm(page, current: Self.password, new: Self.newPassword, confirm: "other"))
            #expect(mismatch.status == 400)
            #expect(mismatch.body.contains("do not match"))
            let weak = try await browser.post(
                path, form: try Self.changeForm(page, current: Self.password, new: "alice"))
            #expect(weak.status == 400)
            #expect(weak.body.contains("at least 12 characters") && weak.body.contains("must not be your username"))
            var forged = try Self.changeForm(page, current: Self.password, new: Self.newPassword)
            forged[0].1 = "forged"
            #expect(try await browser.post(path, form: forged).status == 403)

            let changed = try await browser.post(
                path, form: try Self.changeForm(page, current: Self.password, new: Self.newPassword))
            #expect(changed.status == 200, "\(changed.body)")
            #expect(changed.body.contains("Your password was changed"))
            // One event, for the change that happened, naming the user and carrying no password.
            let events = try await fixture.outboxPayloads(type: .userPasswordChanged)
            #expect(events.count == 1)
            let event = TestJSON.object(Data((events.first ?? "").utf8))
            let data = event["data"] as? [String: Any]
            #expect((data?["user_id"] as? String)?.lowercased() == alice.uuidString.lowercased())
            #expect(data?["method"] as? String == "user")
            #expect(!(events.first ?? "").contains(Self.newPassword) && !(events.first ?? "").contains(Self.password))

            // This browser's session stays; the other device's ended.
            #expect(try await browser.get(path).status == 200)
            // Its session ended: the page sends it to the account sign-in.
            #expect(try await otherDevice.get(path).status == 303)
            var fresh = PageBrowser(client)
            let old = try await AuthorizeFlowTests.signIn(&fresh, fixture, app: app, verifier: PKCE.generateVerifier())
            #expect(old.status == 401)
            let new = try await AuthorizeFlowTests.signIn(
                &fresh, fixture, app: app, verifier: PKCE.generateVerifier(), password: Self.newPassword)
            #expect(new.status == 302)
        }
    }

    @Test func withoutASessionThePageSendsToTheAccountSignInWhichReturnsToIt() async throws {
        try await TokenServiceHarness.run { client, fixture in
            _ = try await fixture.insertUser(username: "alice", password: Self.password)
            var browser = PageBrowser(client)
            let path = "/t/\(fixture.tenant)/account/password"
            let signInPath = "/t/\(fixture.tenant)/account/login?return_to=account/password"
            let page = try await browser.get(path)
            #expect(page.status == 303)
            #expect(page.header("Location") == signInPath)
            browser.cookies[SSOSessions.cookieName] = "made-up-session"
            #expect(try await browser.get(path).header("Location") == signInPath)
            browser.cookies[SSOSessions.cookieName] = nil

            let form = try await browser.get(signInPath)
            #expect(form.status == 200, "\(form.body)")
            let signedIn = try await browser.post(
                "/t/\(fixture.tenant)/login",
                form: [
                    ("csrf_token", try #require(form.field("csrf_token"))),
                    ("authorization_request", try #require(form.field("authorization_request"))),
                    ("username", "alice"), ("password", Self.password),
                ])
            #expect(signedIn.status == 303, "\(signedIn.body)")
            #expect(signedIn.header("Location") == path)
            #expect(browser.cookies[SSOSessions.cookieName] != nil)
            #expect(try await browser.get(path).status == 200)
        }
    }
}
