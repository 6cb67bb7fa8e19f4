import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// The consent page between a signed-in user and a client: who is asked (policy, `prompt=consent`, the
/// user's own instance, another user's instance, first-party clients, the rest), Allow and Deny, the
/// remembered consent and its scopes, `prompt=none`, and the form's CSRF and user binding.
@Suite struct ConsentTests {
    /// A browser holding alice's SSO session (signed in through a first-party app).
    static func signedIn(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, username: String = "alice"
    ) async throws -> (PageBrowser, UUID) {
        let user = try await fixture.insertUser(username: username, password: AuthorizeFlowTests.password)
        let home = try await fixture.insertPublicApp("home-\(username)")
        var browser = PageBrowser(client)
        let first = try await AuthorizeFlowTests.signIn(
            &browser, fixture, app: home, verifier: PKCE.generateVerifier(), username: username)
        #expect(first.status == 302 && first.redirectParameters["code"] != nil, "\(first.body)")
        return (browser, user)
    }

    static func authorize(
        _ browser: inout PageBrowser, _ fixture: TokenServiceHarness, _ app: NativeApp,
        verifier: String = PKCE.generateVerifier(),
        extra: [(String, String)] = []
    ) async throws -> PageResponse {
        try await browser.get(AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, extra: extra))
    }

    static func isConsentPage(_ page: PageResponse, _ fixture: TokenServiceHarness) -> Bool {
        page.status == 200 && page.body.contains("action=\"/t/\(fixture.tenant)/consent\"")
            && page.body.contains("name=\"decision\" value=\"allow\"")
            && page.body.contains("name=\"decision\" value=\"deny\"")
    }

    static func answer(
        _ browser: inout PageBrowser, _ fixture: TokenServiceHarness, _ page: PageResponse, _ decision: String
    ) async throws -> PageResponse {
        try await browser.post(
            "/t/\(fixture.tenant)/consent",
            form: [
                ("csrf_token", try #require(page.field("csrf_token"))),
                ("authorization_request", try #require(page.field("authorization_request"))), ("decision", decision),
            ])
    }

    @Test func anotherClientGetsTheConsentPageAndAllowIssuesTheCodeThenItIsRemembered() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, alice) = try await Self.signedIn(client, fixture)
            let other = try await fixture.insertPublicApp("other", firstParty: false)
            let verifier = PKCE.generateVerifier()
            let page = try await Self.authorize(&browser, fixture, other, verifier: verifier)
            #expect(Self.isConsentPage(page, fixture), "\(page.status) \(page.location ?? page.body)")
            #expect(page.redirectParameters["code"] == nil)
            #expect(page.body.contains("<code>openid</code>") && page.body.contains("<code>profile</code>"))
            #expect(page.body.contains("<strong class=\"client\">other</strong>") && page.body.contains("(alice)"))
            let csp = try #require(page.header("Content-Security-Policy"))
            #expect(csp.contains("frame-ancestors 'none'") && csp.contains("form-action 'self' com.example.app:"))
            #expect(page.header("X-Frame-Options") == "DENY")
            #expect(page.header("Cache-Control") == "no-store")

            let allowed = try await Self.answer(&browser, fixture, page, "allow")
            #expect(allowed.status == 302, "\(allowed.body)")
            #expect(allowed.redirectParameters["state"] == "st-123")
            #expect(allowed.redirectParameters["iss"] == fixture.issuer)
            let code = try #require(allowed.redirectParameters["code"])
            let (status, json) = try await other.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            let claims = try await fixture.verifyAccessToken(
                try #require(json["access_token"] as? String), client: client)
            #expect(claims.sub == alice.uuidString.lowercased())

            // Remembered: the same request passes on the session alone.
            let again = try await Self.authorize(&browser, fixture, other)
            #expect(again.status == 302 && again.redirectParameters["code"] != nil, "\(again.body)")
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM consents WHERE client_id = 'other' AND scope = 'openid profile'") == 1)
        }
    }

    @Test func aRememberedConsentCoversOnlyItsScopesAndAllowStoresTheUnion() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, _) = try await Self.signedIn(client, fixture)
            let other = try await fixture.insertPublicApp("other", firstParty: false, scope: "openid profile email")
            let narrow = try await Self.authorize(&browser, fixture, other, extra: [("scope", "openid")])
            #expect(Self.isConsentPage(narrow, fixture))
            #expect(try await Self.answer(&browser, fixture, narrow, "allow").redirectParameters["code"] != nil)
            #expect(try await Self.authorize(&browser, fixture, other, extra: [("scope", "openid")]).status == 302)

            let wider = try await Self.authorize(&browser, fixture, other, extra: [("scope", "openid email")])
            #expect(Self.isConsentPage(wider, fixture), "a wider request must ask again")
            #expect(wider.body.contains("<code>email</code>"))
            #expect(try await Self.answer(&browser, fixture, wider, "allow").redirectParameters["code"] != nil)
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM consents WHERE client_id = 'other' AND scope = 'email openid'") == 1)
            // Both earlier approvals together cover a request for either; profile was never approved.
            #expect(try await Self.authorize(&browser, fixture, other, extra: [("scope", "email")]).status == 302)
            #expect(
                Self.isConsentPage(
                    try await Self.authorize(&browser, fixture, other, extra: [("scope", "openid profile")]), fixture))
        }
    }

    @Test func denyRedirectsWithAccessDeniedAndRemembersNothing() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, _) = try await Self.signedIn(client, fixture)
            let other = try await fixture.insertPublicApp("other", firstParty: false)
            let page = try await Self.authorize(&browser, fixture, other)
            let denied = try await Self.answer(&browser, fixture, page, "deny")
            #expect(denied.status == 302)
            #expect(denied.location?.hasPrefix("com.example.app:/cb?") == true)
            #expect(denied.redirectParameters["error"] == "access_denied")
            #expect(denied.redirectParameters["state"] == "st-123")
            #expect(denied.redirectParameters["iss"] == fixture.issuer)
            #expect(denied.redirectParameters["code"] == nil)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM consents") == 0)
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM authorization_codes WHERE client_id = 'other'") == 0
            )
            #expect(Self.isConsentPage(try await Self.authorize(&browser, fixture, other), fixture))
            let unknown = try await Self.answer(&browser, fixture, page, "maybe")
            #expect(unknown.status == 400 && unknown.location == nil)
        }
    }

    @Test func ownInstanceAndFirstPartyPassSilentlyOtherUsersInstanceAndUnflaggedClientsAsk() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, alice) = try await Self.signedIn(client, fixture)
            let bob = try await fixture.insertUser(username: "bob")
            let own = try await fixture.insertPublicApp("alice-phone", firstParty: false, owner: alice)
            let bobs = try await fixture.insertPublicApp("bob-phone", firstParty: false, owner: bob)
            let firstParty = try await fixture.insertPublicApp("tenant-app", firstParty: true)
            let unflagged = try await fixture.insertPublicApp("partner", firstParty: false)

            #expect(try await Self.authorize(&browser, fixture, own).redirectParameters["code"] != nil)
            #expect(try await Self.authorize(&browser, fixture, firstParty).redirectParameters["code"] != nil)
            let other = try await Self.authorize(&browser, fixture, bobs)
            #expect(Self.isConsentPage(other, fixture))
            #expect(other.body.contains("registered by another user"))
            let partner = try await Self.authorize(&browser, fixture, unflagged)
            #expect(Self.isConsentPage(partner, fixture))
            #expect(!partner.body.contains("registered by another user"))

            // prompt=consent asks even where nothing else would.
            for app in [own, firstParty] {
                let forced = try await Self.authorize(&browser, fixture, app, extra: [("prompt", "consent")])
                #expect(Self.isConsentPage(forced, fixture), "prompt=consent for \(app.clientID)")
            }
        }
    }

    @Test func policyRequiringConsentAsksForEveryClientUntilRemembered() async throws {
        try await TokenServiceHarness.run(policy: #"{"consent":{"required":true,"remember_for":3600}}"#) {
            client, fixture in
            let alice = try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            let home = try await fixture.insertPublicApp("home", firstParty: true)
            var browser = PageBrowser(client)
            // Right after the sign-in: the consent page, with the new session already set.
            let signedIn = try await AuthorizeFlowTests.signIn(
                &browser, fixture, app: home, verifier: PKCE.generateVerifier())
            #expect(Self.isConsentPage(signedIn, fixture), "\(signedIn.status) \(signedIn.location ?? "")")
            #expect(signedIn.setCookie(SSOSessions.cookieName) != nil)
            #expect(try await Self.answer(&browser, fixture, signedIn, "allow").redirectParameters["code"] != nil)
            #expect(try await Self.authorize(&browser, fixture, home).redirectParameters["code"] != nil)

            let own = try await fixture.insertPublicApp("alice-phone", firstParty: false, owner: alice)
            let page = try await Self.authorize(&browser, fixture, own)
            #expect(Self.isConsentPage(page, fixture), "policy consent.required asks for the user's own instance too")
            let expiry = try await fixture.count(
                "SELECT extract(epoch FROM expires_at - granted_at)::int8 FROM consents WHERE client_id = 'home'")
            // remember_for is 3600 s; the two timestamps come from the service and the database, a few
            // seconds apart on a loaded machine.
            #expect((3590...3610).contains(expiry), "\(expiry)")
        }
    }

    @Test func rememberForZeroAsksEveryTime() async throws {
        try await TokenServiceHarness.run(policy: #"{"consent":{"remember_for":0}}"#) { client, fixture in
            var (browser, _) = try await Self.signedIn(client, fixture)
            let other = try await fixture.insertPublicApp("other", firstParty: false)
            let page = try await Self.authorize(&browser, fixture, other)
            #expect(try await Self.answer(&browser, fixture, page, "allow").redirectParameters["code"] != nil)
            #expect(Self.isConsentPage(try await Self.authorize(&browser, fixture, other), fixture))
            #expect(try await fixture.count("SELECT count(*)::int8 FROM consents") == 0)
        }
    }

    @Test func promptNoneWithoutRememberedConsentIsConsentRequired() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, _) = try await Self.signedIn(client, fixture)
            let other = try await fixture.insertPublicApp("other", firstParty: false)
            let none = try await Self.authorize(&browser, fixture, other, extra: [("prompt", "none")])
            #expect(none.status == 302)
            #expect(none.redirectParameters["error"] == "consent_required")
            #expect(none.redirectParameters["state"] == "st-123")
            #expect(none.redirectParameters["iss"] == fixture.issuer)
            #expect(none.redirectParameters["code"] == nil)

            let page = try await Self.authorize(&browser, fixture, other)
            #expect(try await Self.answer(&browser, fixture, page, "allow").redirectParameters["code"] != nil)
            let remembered = try await Self.authorize(&browser, fixture, other, extra: [("prompt", "none")])
            #expect(remembered.redirectParameters["code"] != nil, "\(remembered.location ?? remembered.body)")
        }
    }

    @Test func consentFormNeedsItsCSRFTokenAndTheUserItWasShownTo() async throws {
        try await TokenServiceHarness.run { client, fixture in
            var (browser, _) = try await Self.signedIn(client, fixture)
            let other = try await fixture.insertPublicApp("other", firstParty: false)
            let page = try await Self.authorize(&browser, fixture, other)
            let csrf = try #require(page.field("csrf_token"))
            let sealed = try #require(page.field("authorization_request"))
            let path = "/t/\(fixture.tenant)/consent"

            let missing = try await browser.post(
                path, form: [("authorization_request", sealed), ("decision", "allow")])
            #expect(missing.status == 403 && missing.location == nil)
            let wrong = try await browser.post(
                path,
                form: [
                    ("csrf_token", String(csrf.reversed())), ("authorization_request", sealed), ("decision", "allow"),
                ])
            #expect(wrong.status == 403 && wrong.location == nil)
            // A cross-site post: the right token and the SSO cookie, but not the CSRF cookie it belongs to.
            var crossSite = PageBrowser(client)
            crossSite.cookies[SSOSessions.cookieName] = browser.cookies[SSOSessions.cookieName]
            let forged = try await crossSite.post(
                path, form: [("csrf_token", csrf), ("authorization_request", sealed), ("decision", "allow")])
            #expect(forged.status == 403 && forged.location == nil)

            // Another user signing in in this browser cannot answer the page shown to alice.
            var (bobBrowser, _) = try await Self.signedIn(client, fixture, username: "bob")
            bobBrowser.cookies[CSRFGuard.cookieName] = browser.cookies[CSRFGuard.cookieName]
            let swapped = try await bobBrowser.post(
                path, form: [("csrf_token", csrf), ("authorization_request", sealed), ("decision", "allow")])
            #expect(swapped.status == 400 && swapped.location == nil, "\(swapped.status) \(swapped.location ?? "")")
            // Without a session at all, neither.
            var signedOut = browser
            signedOut.cookies[SSOSessions.cookieName] = nil
            let noSession = try await signedOut.post(
                path, form: [("csrf_token", csrf), ("authorization_request", sealed), ("decision", "allow")])
            #expect(noSession.status == 400 && noSession.location == nil)
            // A sign-in page's sealed request is not a consent page's.
            var anonymous = PageBrowser(client)
            let signInPage = try await Self.authorize(&anonymous, fixture, other)
            var mixed = browser
            mixed.cookies[CSRFGuard.cookieName] = anonymous.cookies[CSRFGuard.cookieName]
            let notAsked = try await mixed.post(
                path,
                form: [
                    ("csrf_token", try #require(signInPage.field("csrf_token"))),
                    ("authorization_request", try #require(signInPage.field("authorization_request"))),
                    ("decision", "allow"),
                ])
            #expect(notAsked.status == 400 && notAsked.location == nil)
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM authorization_codes WHERE client_id = 'other'") == 0
            )

            // The page itself still works for alice.
            #expect(try await Self.answer(&browser, fixture, page, "allow").redirectParameters["code"] != nil)
        }
    }
}
