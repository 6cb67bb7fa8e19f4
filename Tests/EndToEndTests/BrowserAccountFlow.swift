import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// The account page and RP-Initiated Logout in the browser.
extension BrowserFlows {
    /// The demo user signs in on a freshly registered instance (another user's app for them: consent), sees it
    /// on the account page, signs out of it after the confirmation page, then signs out of Latchkey through
    /// the logout confirmation page; `prompt=none` then needs a sign-in again.
    func accountPageAndLogout(_ browser: BrowserSession) async throws {
        let adminToken = try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
        let iat = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/\(endpoints.tenant)/initial-access-tokens",
                #"{"uses":1,"expires_in":600}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]), 201, "mint an initial access token")
        let metadata = try String(
            decoding: JSONSerialization.data(withJSONObject: [
                "client_name": "Kitchen tablet", "redirect_uris": [callback.redirectURI],
                "post_logout_redirect_uris": [callback.redirectURI], "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "scope": "openid",
            ]), as: UTF8.self)
        let registered = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/\(endpoints.tenant)/register", metadata,
                headers: [
                    ("Authorization", "Bearer \(try required(iat.json["initial_access_token"] as? String, "IAT"))")
                ]),
            201, "register the instance")
        let instance = try required(registered.json["client_id"] as? String, "client_id")

        let verifier = PKCE.generateVerifier()
        let index = callback.count
        try await browser.navigate(
            "\(endpoints.issuer)/authorize?"
                + DemoHTTP.form([
                    ("response_type", "code"), ("client_id", instance), ("redirect_uri", callback.redirectURI),
                    ("scope", "openid"), ("state", "tablet"), ("code_challenge", PKCE.s256Challenge(for: verifier)),
                    ("code_challenge_method", "S256"),
                ]))
        try await waitForPage(browser, title: "Sign in")
        try await browser.type(try await browser.find("#username"), credentials.username)
        try await browser.type(try await browser.find("#password"), credentials.password + BrowserSession.enter)
        try await waitForPage(browser, title: "Allow access")
        try await browser.click(try await browser.find("button[value=allow]"))
        let query = try await callback.query(index)
        let tokens = try expect(
            try await http.postForm(
                endpoints.tokenEndpoint,
                [
                    ("grant_type", "authorization_code"), ("code", try required(query["code"], "code")),
                    ("redirect_uri", callback.redirectURI), ("client_id", instance), ("code_verifier", verifier),
                ]), 200, "redeem the tablet's code")
        let refresh = try required(tokens.json["refresh_token"] as? String, "refresh token")

        // The loopback callback (not ours) has no favicon; its console entry is not about our pages.
        _ = try await browser.consoleLog()
        try await browser.navigate("\(endpoints.issuer)/account")
        try await waitForPage(browser, title: "Your devices")
        #expect(try await browser.executeString("return document.body.textContent").contains("Kitchen tablet"))
        try await PageScreenshots.capture(browser, "account")
        try await browser.click(try await browser.find("a.action[href$='/sign-out']"))
        try await waitForPage(browser, title: "Sign out of this device")
        try await PageScreenshots.capture(browser, "account-sign-out")
        try await browser.press([BrowserSession.enter])
        try await waitForPage(browser, title: "Your devices")
        #expect(
            try await browser.executeString("return document.querySelector('.notice').textContent")
                == "You are signed out of that device.")
        let refused = try await http.postForm(
            endpoints.tokenEndpoint,
            [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", instance)])
        #expect(refused.status == 400, "the tablet's refresh token died with the sign-out")

        try await browser.navigate(
            "\(endpoints.issuer)/logout?"
                + DemoHTTP.form([
                    ("client_id", instance), ("post_logout_redirect_uri", callback.redirectURI), ("state", "bye"),
                ]))
        try await waitForPage(browser, title: "Sign out")
        try await PageScreenshots.capture(browser, "logout")
        try await browser.click(try await browser.find("button[type=submit]"))
        let back = try await callback.query(index + 1)
        #expect(back["state"] == "bye" && back["code"] == nil)
        // The session ended: a silent authorization in the same browser now needs a sign-in.
        try await browser.navigate(
            "\(endpoints.issuer)/authorize?"
                + DemoHTTP.form([
                    ("response_type", "code"), ("client_id", instance), ("redirect_uri", callback.redirectURI),
                    ("state", "after"), ("prompt", "none"), ("code_challenge", PKCE.s256Challenge(for: verifier)),
                    ("code_challenge_method", "S256"),
                ]))
        let silent = try await callback.query(index + 2)
        #expect(silent["error"] == "login_required" && silent["state"] == "after")
        try await browser.navigate("\(endpoints.issuer)/account")
        try await waitForPage(browser, title: "Your devices")
        #expect(try await browser.executeString("return document.body.textContent").contains("You are not signed in"))
        try await signInOnTheAccountPageAndRemoveADevice(browser)
    }

    /// From the signed-out account page: its own "Sign in", then "Remove this device" on an instance the user
    /// registered with their DCR token.
    private func signInOnTheAccountPageAndRemoveADevice(_ browser: BrowserSession) async throws {
        let phone = try await registerInstanceOfTheDemoUser(name: "Garden phone")
        try await browser.click(try await browser.find("a.action[href$='/account/login']"))
        try await waitForPage(browser, title: "Sign in")
        try await browser.type(try await browser.find("#username"), credentials.username)
        try await browser.type(try await browser.find("#password"), credentials.password + BrowserSession.enter)
        try await waitForPage(browser, title: "Your devices")
        #expect(try await browser.currentURL() == "\(endpoints.issuer)/account")
        #expect(try await browser.executeString("return document.body.textContent").contains("Garden phone"))
        try await browser.click(try await browser.find("a.action.secondary[href$='/\(phone)/remove']"))
        try await waitForPage(browser, title: "Remove this device")
        try await PageScreenshots.capture(browser, "account-remove")
        try await browser.press([BrowserSession.enter])
        try await waitForPage(browser, title: "Your devices")
        #expect(
            try await browser.executeString("return document.querySelector('.notice').textContent")
                == "The device was removed.")
        #expect(
            try await browser.execute(
                "return document.querySelector(\"a[href$='/\(phone)/remove']\") === null") as? Bool == true,
            "a removed device offers no more actions")
    }

    /// Registers an instance with `authenticated_user` = the demo user: a DCR token from the demo's DCR client
    /// (sign-in over plain HTTP, outside the browser), then RFC 7591 registration with it.
    private func registerInstanceOfTheDemoUser(name: String) async throws -> String {
        let verifier = PKCE.generateVerifier()
        var answer = try await http.get(
            "\(endpoints.issuer)/authorize?"
                + DemoHTTP.form([
                    ("response_type", "code"), ("client_id", credentials.dcrClientID),
                    ("redirect_uri", DemoSeeder.dcrRedirectURI), ("scope", "dcr"), ("state", "own"),
                    ("code_challenge", PKCE.s256Challenge(for: verifier)), ("code_challenge_method", "S256"),
                ]))
        if answer.status == 200 {
            answer = try await http.postForm(
                "\(endpoints.issuer)/login",
                [
                    ("csrf_token", try required(answer.field("csrf_token"), "csrf_token")),
                    ("authorization_request", try required(answer.field("authorization_request"), "pending request")),
                    ("username", credentials.username), ("password", credentials.password),
                ])
        }
        let code = try required(answer.redirectParameters["code"], "DCR code (\(answer.status))")
        let tokens = try expect(
            try await http.postForm(
                endpoints.tokenEndpoint,
                [
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", DemoSeeder.dcrRedirectURI),
                    ("client_id", credentials.dcrClientID), ("code_verifier", verifier),
                ]), 200, "DCR token")
        let token = try required(tokens.json["access_token"] as? String, "DCR access token")
        let metadata = try String(
            decoding: JSONSerialization.data(withJSONObject: [
                "client_name": name, "redirect_uris": [DemoSeeder.dcrRedirectURI], "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "scope": "openid",
            ]), as: UTF8.self)
        let registered = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/\(endpoints.tenant)/register", metadata,
                headers: [("Authorization", "Bearer \(token)")]), 201, "register the user's instance")
        return try required(registered.json["client_id"] as? String, "client_id")
    }
}
