import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// Several users on one app instance, "sign out of this device" per user, "remove this device" for the
/// instance's own user, through the account API and the account page.
@Suite struct AccountDevicesTests {
    /// Signs `username` in on `app` (answering the consent page when it comes) and redeems the code.
    static func grant(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, app: NativeApp, browser: PageBrowser,
        scope: String = "openid profile"
    ) async throws -> (PageBrowser, String, String) {
        var browser = browser
        let verifier = PKCE.generateVerifier()
        var page = try await browser.get(
            AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, extra: [("scope", scope)]))
        if ConsentTests.isConsentPage(page, fixture) {
            page = try await ConsentTests.answer(&browser, fixture, page, "allow")
        }
        let code = try #require(page.redirectParameters["code"], "\(page.status) \(page.body)")
        let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
        #expect(status == 200, "\(json)")
        return (browser, try #require(json["access_token"] as? String), (json["refresh_token"] as? String) ?? "")
    }

    /// The first-party app that may ask for `account` (a static client, as an administrator makes it).
    static func accountApp(_ fixture: TokenServiceHarness) async throws -> NativeApp {
        try await fixture.insertClient(
            "account-app", authMethod: .noAuthentication, grantTypes: [.authorizationCode, .refreshToken],
            scope: "openid account", isStatic: true, dpopBound: true, firstParty: true)
        return try NativeApp(clientID: "account-app")
    }

    static func call(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, _ method: HTTPRequest.Method, _ path: String,
        token: String, app: NativeApp, form: String? = nil, bearer: Bool = false
    ) async throws -> (Int, [String: Any]) {
        var headers: HTTPFields = [:]
        if bearer {
            headers[.authorization] = "Bearer \(token)"
        } else {
            headers[.authorization] = "DPoP \(token)"
            headers[HTTPField.Name("DPoP")!] = try app.dpop.proof(
                method: method.rawValue, url: fixture.origin + path, accessToken: token)
        }
        if form != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        return try await client.execute(
            uri: path, method: method, headers: headers, body: form.map { ByteBuffer(string: $0) }
        ) { (Int($0.status.code), TestJSON.object($0.body.readableBytesView)) }
    }

    @Test func aSecondUserSignsInOnAnInstanceAndSignsOutOfItAlone() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (aliceBrowser, alice) = try await ConsentTests.signedIn(client, fixture, username: "alice")
            let (bobBrowser, bob) = try await ConsentTests.signedIn(client, fixture, username: "bob")
            let phone = try await fixture.insertPublicApp("phone-1", firstParty: false, owner: alice)
            let accountApp = try await Self.accountApp(fixture)
            // Alice's own instance: no question; bob approves it on the consent page.
            let (_, aliceAccess, aliceRefresh) = try await Self.grant(
                client, fixture, app: phone, browser: aliceBrowser)
            let (bobAfter, bobAccess, bobRefresh) = try await Self.grant(
                client, fixture, app: phone, browser: bobBrowser)
            #expect(
                try await fixture.verifyAccessToken(aliceAccess, client: client).sub == alice.uuidString.lowercased())
            #expect(try await fixture.verifyAccessToken(bobAccess, client: client).sub == bob.uuidString.lowercased())
            let (_, bobAccount, _) = try await Self.grant(
                client, fixture, app: accountApp, browser: bobAfter, scope: "account")

            let base = "/t/\(fixture.tenant)/account/clients"
            let (listed, list) = try await Self.call(client, fixture, .get, base, token: bobAccount, app: accountApp)
            #expect(listed == 200, "\(list)")
            let devices = try #require(list["clients"] as? [[String: Any]])
            #expect(devices.count == 1)
            #expect(devices.first?["client_id"] as? String == "phone-1")
            #expect(devices.first?["registered_by_you"] as? Bool == false)
            #expect(devices.first?["signed_in"] as? Bool == true)

            // Without the account scope, as Bearer when bound, or without a token: refused.
            let (noScope, _) = try await Self.call(client, fixture, .get, base, token: bobAccess, app: phone)
            #expect(noScope == 403)
            let (downgrade, _) = try await Self.call(
                client, fixture, .get, base, token: bobAccount, app: accountApp, bearer: true)
            #expect(downgrade == 401)

            let revoke = "\(base)/phone-1/revoke"
            let (notOwner, denied) = try await Self.call(
                client, fixture, .post, revoke, token: bobAccount, app: accountApp, form: "action=remove")
            #expect(notOwner == 403, "\(denied)")
            let (unknown, _) = try await Self.call(
                client, fixture, .post, "\(base)/someone-elses/revoke", token: bobAccount, app: accountApp)
            #expect(unknown == 404)
            let (signedOut, body) = try await Self.call(
                client, fixture, .post, revoke, token: bobAccount, app: accountApp)
            #expect(signedOut == 200, "\(body)")
            #expect(body["refresh_tokens_revoked"] as? Int == 1)
            #expect(body["access_tokens_revoked"] as? Int == 1)

            // Bob's grants on the instance are gone, alice's stay, the instance stays.
            #expect(try await phone.refresh(client, fixture, token: bobRefresh).0 == 400)
            #expect(try await phone.refresh(client, fixture, token: aliceRefresh).0 == 200)
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM clients WHERE client_id = 'phone-1' AND status = 'active'") == 1)
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM consents WHERE client_id = 'phone-1' AND user_id = '\(bob)'") == 0)
            let events = try await fixture.outboxPayloads(type: .tokenRevoked).map {
                try CloudEvent<TokenRevoked>.decode(from: Data($0.utf8))
            }
            let mine = events.filter { $0.data.reason == .user }
            #expect(mine.count == 1)
            #expect(mine.first?.data.userID == bob)
            #expect(mine.first?.data.clientID == "phone-1")
            #expect(mine.first?.data.revokedJTIs?.count == 1)
            let validator = try EventSchemaValidator()
            for payload in try await fixture.outboxPayloads(type: .tokenRevoked) {
                #expect(
                    validator.firstError(in: try StrictJSONParser.parse(Array(payload.utf8)), as: .tokenRevoked) == nil)
            }
        }
    }

    @Test func theInstancesOwnUserRemovesIt() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (aliceBrowser, alice) = try await ConsentTests.signedIn(client, fixture, username: "alice")
            let phone = try await fixture.insertPublicApp("phone-2", firstParty: false, owner: alice)
            let accountApp = try await Self.accountApp(fixture)
            let (after, _, refresh) = try await Self.grant(client, fixture, app: phone, browser: aliceBrowser)
            let (_, account, _) = try await Self.grant(
                client, fixture, app: accountApp, browser: after, scope: "account")
            let (status, body) = try await Self.call(
                client, fixture, .post, "/t/\(fixture.tenant)/account/clients/phone-2/revoke", token: account,
                app: accountApp, form: "action=remove")
            #expect(status == 200, "\(body)")
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM clients WHERE client_id = 'phone-2' AND status = 'revoked'") == 1)
            #expect(try await phone.refresh(client, fixture, token: refresh).0 != 200)
            let revoked = try await fixture.outboxPayloads(type: .clientRevoked)
            #expect(revoked.count == 1)
            let event = try CloudEvent<ClientRevoked>.decode(from: Data(revoked[0].utf8))
            #expect(event.data.reason == .user)
            #expect(event.data.authenticatedUser == alice)
            let validator = try EventSchemaValidator()
            #expect(
                validator.firstError(in: try StrictJSONParser.parse(Array(revoked[0].utf8)), as: .clientRevoked) == nil)
        }
    }

    @Test func theAccountPageListsDevicesAndConfirmsEachAction() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (aliceBrowser, alice) = try await ConsentTests.signedIn(client, fixture, username: "alice")
            let phone = try await fixture.insertPublicApp("phone-3", firstParty: false, owner: alice)
            var (browser, _, refresh) = try await Self.grant(client, fixture, app: phone, browser: aliceBrowser)

            var anonymous = PageBrowser(client)
            let outside = try await anonymous.get("/t/\(fixture.tenant)/account")
            #expect(outside.status == 200)
            #expect(outside.body.contains("You are not signed in here"))
            #expect(outside.body.contains("href=\"/t/\(fixture.tenant)/account/login\""))

            let page = try await browser.get("/t/\(fixture.tenant)/account")
            #expect(page.status == 200)
            #expect(page.header("X-Frame-Options") == "DENY")
            #expect(page.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
            #expect(page.body.contains("phone-3") && page.body.contains("Sign out of this device"))
            #expect(page.body.contains("Remove this device"))

            let confirmPath = "/t/\(fixture.tenant)/account/clients/phone-3/sign-out"
            let confirm = try await browser.get(confirmPath)
            #expect(confirm.status == 200)
            #expect(confirm.body.contains("Sign out of this device?"))
            let forged = try await browser.post(confirmPath, form: [("csrf_token", "nope")])
            #expect(forged.status == 403)
            #expect(try await phone.refresh(client, fixture, token: refresh).0 == 200)
            // The successful refresh rotated the token; sign out ends the new family too.
            let done = try await browser.post(
                confirmPath, form: [("csrf_token", try #require(confirm.field("csrf_token")))])
            #expect(done.status == 303)
            #expect(done.location == "/t/\(fixture.tenant)/account?done=signed_out")
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM refresh_tokens WHERE client_id = 'phone-3' AND status = 'active'") == 0)
            let after = try await browser.get(try #require(done.location))
            #expect(after.body.contains("You are signed out of that device."))

            // Another user cannot act on alice's device through the page.
            var (bobBrowser, _) = try await ConsentTests.signedIn(client, fixture, username: "bob")
            #expect(try await bobBrowser.get("/t/\(fixture.tenant)/account/clients/phone-3/remove").status == 404)

            let remove = try await browser.get("/t/\(fixture.tenant)/account/clients/phone-3/remove")
            #expect(remove.status == 200)
            let removed = try await browser.post(
                "/t/\(fixture.tenant)/account/clients/phone-3/remove",
                form: [("csrf_token", try #require(remove.field("csrf_token")))])
            #expect(removed.status == 303)
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM clients WHERE client_id = 'phone-3' AND status = 'revoked'") == 1)
        }
    }

    @Test func theAccountPageHasItsOwnSignIn() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let alice = try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            _ = try await fixture.insertPublicApp("phone-4", firstParty: false, owner: alice)
            var browser = PageBrowser(client)
            // Only account pages are return targets: anything else comes back to the device list.
            let form = try await browser.get("/t/\(fixture.tenant)/account/login?return_to=https://evil.example/")
            #expect(form.status == 200, "\(form.body)")
            #expect(form.header("Content-Security-Policy")?.contains("form-action 'self';") == true)
            func post(_ password: String) async throws -> PageResponse {
                try await browser.post(
                    "/t/\(fixture.tenant)/login",
                    form: [
                        ("csrf_token", try #require(form.field("csrf_token"))),
                        ("authorization_request", try #require(form.field("authorization_request"))),
                        ("username", "alice"), ("password", password),
                    ])
            }
            let wrong = try await post("not the password")
            #expect(wrong.status == 401)
            #expect(wrong.body.contains("invalid username or password"))
            #expect(browser.cookies[SSOSessions.cookieName] == nil)

            let signedIn = try await post(AuthorizeFlowTests.password)
            #expect(signedIn.status == 303, "\(signedIn.body)")
            #expect(signedIn.location == "/t/\(fixture.tenant)/account")
            let page = try await browser.get("/t/\(fixture.tenant)/account")
            #expect(page.body.contains("Signed in as <strong>alice</strong>") && page.body.contains("phone-4"))
            #expect(page.body.contains("href=\"/t/\(fixture.tenant)/account/password\""))
            // No code was issued: the sign-in was for the account pages, not for an application.
            #expect(try await fixture.count("SELECT count(*)::int8 FROM authorization_codes") == 0)
            // Signed in already: straight to the page.
            let again = try await browser.get("/t/\(fixture.tenant)/account/login")
            #expect(again.status == 303)
            #expect(again.location == "/t/\(fixture.tenant)/account")
        }
    }
}
