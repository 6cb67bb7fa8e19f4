import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// The sign-in, sign-up, consent, error and admin pages in a real browser: headless Chromium driven through
/// chromedriver's W3C WebDriver API, against the whole platform as processes (one platform for every
/// scenario), with a native app's loopback redirect URI. Every page is screenshotted (``PageScreenshots``).
/// Proves what HTTP-level tests cannot: the browser accepts our CSP (`form-action` covering the
/// redirect), cookies and redirects, keyboard use works, and reflected input never runs as script.
@Suite(.serialized) struct BrowserSignInTests {
    @Test func signInSSOSignUpKeyboardXSSAndAdminPageInHeadlessChromium() async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            // chromedriver first: a machine without Chromium fails at once, before the platform starts.
            let chrome = try await ChromeDriver()
            let platform: PlatformProcesses
            do { platform = try await PlatformProcesses(database: scratch) } catch {
                try await chrome.stop()
                throw error
            }
            let http = DemoHTTP()
            do {
                try await LoopbackCallback.serve { callback in
                    let flows = try await BrowserFlows.seed(
                        platform.endpoints, http: http, driver: chrome, callback: callback)
                    try await chrome.withSession(flows.signInThenSingleSignOn)
                    try await chrome.withSession(flows.signUp)
                    try await chrome.withSession(flows.hostileInputNeverRuns)
                    try await chrome.withSession(flows.authorizeErrorPage)
                    try await chrome.withSession(flows.adminRevokesAnInstance)
                    try await chrome.withSession(flows.accountPageAndLogout)
                }
            } catch {
                Issue.record(
                    "\(error)\n--- chromedriver\n\(chrome.output().suffix(2_000))\n--- token\n\(platform.output("token-service").suffix(2_000))\n--- gateway\n\(platform.output("registration-gateway").suffix(1_000))"
                )
            }
            try await chrome.stop()
            try await http.shutdown()
            let statuses = await platform.stop()
            for (name, status) in statuses { #expect(status == 0, "\(name) did not stop cleanly") }
        }
    }
}

/// The browser scenarios, each in a fresh browser session (own profile, no cookies) unless SSO is the point.
struct BrowserFlows {
    let endpoints: DemoEndpoints
    let http: DemoHTTP
    let driver: ChromeDriver
    let callback: LoopbackCallback
    let credentials: DemoCredentials
    let clientID: String

    /// The demo tenant (DemoSeeder) plus a static public native client redirecting to the loopback listener
    /// (not first-party: its users see the consent page once).
    static func seed(_ endpoints: DemoEndpoints, http: DemoHTTP, driver: ChromeDriver, callback: LoopbackCallback)
        async throws -> BrowserFlows
    {
        let credentials = try await DemoSeeder(
            http: http, endpoints: endpoints, bootstrapKey: PlatformProcesses.bootstrapKey
        ).seed()
        let adminToken = try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
        let client = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/\(endpoints.tenant)/clients",
                #"{"client_name":"Browser test app","application_type":"native","redirect_uris":["\#(callback.redirectURI)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":["code"],"scope":"openid"}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]), 201, "create the loopback client")
        let clientID = try required(client.json["client_id"] as? String, "client_id")
        return BrowserFlows(
            endpoints: endpoints, http: http, driver: driver, callback: callback, credentials: credentials,
            clientID: clientID)
    }

    // MARK: scenarios

    /// Sign in with the page (checking its cookies, labels and keyboard order), approve the client on the
    /// consent page, then a second /authorize in the same browser comes back without showing a page.
    func signInThenSingleSignOn(_ browser: BrowserSession) async throws {
        let first = AuthorizationAttempt(state: "first-" + UUID().uuidString)
        try await browser.navigate(authorizeURL(first))
        try await waitForPage(browser, title: "Sign in")
        try await checkAccessibility(browser, inputs: ["username", "password"])
        try await PageScreenshots.capture(browser, "sign-in")

        try await browser.type(try await browser.find("#username"), credentials.username)
        try await browser.type(try await browser.find("#password"), credentials.password)
        try await browser.click(try await browser.find("button[type=submit]"))
        try await approveConsent(browser, screenshot: "consent")
        try await redeem(try await callback.query(0), for: first)

        // The cookies as the browser stored them (read on a page under their path).
        try await browser.navigate("\(endpoints.issuer)/jwks")
        let cookies = Dictionary(
            try await browser.cookies().map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        let secure = endpoints.issuer.hasPrefix("https://")
        for (name, sameSite) in [("latchkey_session", "Lax"), ("latchkey_csrf", "Strict")] {
            let cookie = try required(cookies[name], "the \(name) cookie in the browser")
            #expect(cookie["httpOnly"] as? Bool == true, "\(name) HttpOnly")
            #expect(cookie["sameSite"] as? String == sameSite, "\(name) SameSite")
            #expect(cookie["secure"] as? Bool == secure, "\(name) Secure only on https")
            #expect(cookie["path"] as? String == "/t/\(endpoints.tenant)", "\(name) path")
        }
        #expect(
            try await browser.executeString("return document.cookie") == "", "HttpOnly cookies are invisible to script")

        // SSO and the remembered consent complete the second authorization, no page in between.
        let second = AuthorizationAttempt(state: "sso-" + UUID().uuidString)
        try await browser.navigate(authorizeURL(second))
        try await redeem(try await callback.query(1), for: second)
        try await browser.waitUntil("the browser lands on the callback") {
            try await browser.currentURL().hasPrefix(callback.redirectURI)
        }
        #expect(callback.count == 2)
    }

    /// A new user follows the sign-up link, fills the form and lands on the callback.
    func signUp(_ browser: BrowserSession) async throws {
        let attempt = AuthorizationAttempt(state: "signup-" + UUID().uuidString)
        try await browser.navigate(authorizeURL(attempt))
        try await waitForPage(browser, title: "Sign in")
        try await browser.click(try await browser.find("a[href*='/signup?']"))
        try await waitForPage(browser, title: "Create an account")
        try await checkAccessibility(browser, inputs: ["username", "email", "password"])
        try await PageScreenshots.capture(browser, "sign-up")
        let username = "browser-" + UUID().uuidString.lowercased().prefix(8)
        try await browser.type(try await browser.find("#username"), username)
        try await browser.type(try await browser.find("#email"), "\(username)@example.com")
        try await browser.type(try await browser.find("#password"), "Browser pass 4 \(UUID().uuidString)")
        try await browser.click(try await browser.find("button[type=submit]"))
        try await approveConsent(browser, screenshot: nil)
        try await redeem(try await callback.query(2), for: attempt)
    }

    /// Markup in `state`, `login_hint` and a re-shown username never runs; the CSP blocks inline script
    /// even when it gets into the page; the hostile state still comes back to the app byte for byte.
    func hostileInputNeverRuns(_ browser: BrowserSession) async throws {
        let payload = #""><script>window.__x=1</script><img src=x onerror="window.__x=2">"#
        let attempt = AuthorizationAttempt(state: payload)
        try await browser.navigate(authorizeURL(attempt, extra: [("login_hint", payload)]))
        try await waitForPage(browser, title: "Sign in")
        #expect(
            try await browser.execute("return window.__x === undefined && document.scripts.length === 0") as? Bool
                == true)

        // A failed sign-in re-shows the username in the form.
        try await browser.type(try await browser.find("#username"), payload)
        try await browser.type(try await browser.find("#password"), "not the password")
        try await browser.click(try await browser.find("button[type=submit]"))
        try await browser.waitUntil("the error is shown") {
            try await browser.execute("return document.getElementById('form-error') !== null") as? Bool == true
        }
        #expect(
            try await browser.execute("return window.__x === undefined && document.scripts.length === 0") as? Bool
                == true)
        #expect(try await browser.executeString("return document.getElementById('username').value") == payload)

        // Script that does reach the DOM is still refused by the CSP (default-src 'none', no script-src).
        _ = try await browser.consoleLog()
        let blocked = try await browser.execute(
            """
            window.__violations = [];
            document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.effectiveDirective));
            const script = document.createElement('script');
            script.textContent = 'window.__y = 1';
            document.body.appendChild(script);
            return window.__y === undefined;
            """)
        #expect(blocked as? Bool == true, "an inline script ran despite the CSP")
        try await browser.waitUntil("the CSP violation is reported") {
            try await browser.executeString("return window.__violations.join(',')").contains("script-src")
        }
        let console = try await browser.consoleLog()
        #expect(
            console.contains { $0.contains("Content Security Policy") }, "no CSP message in the console: \(console)")

        let username = try await browser.find("#username")
        try await driver.call("POST", "/session/\(browser.id)/element/\(username)/clear", [:])
        try await browser.type(username, credentials.username)
        try await browser.type(try await browser.find("#password"), credentials.password)
        try await browser.click(try await browser.find("button[type=submit]"))
        try await redeem(try await callback.query(3), for: attempt)
    }

    // MARK: helpers

    /// The consent page names the client and its scope, renders without console errors or CSP violations,
    /// has Allow focused first and Deny after it, and Allow leads to the callback.
    func approveConsent(_ browser: BrowserSession, screenshot: String?) async throws {
        try await waitForPage(browser, title: "Allow access")
        #expect(
            try await browser.executeString("return document.querySelector('.client').textContent")
                == "Browser test app")
        #expect(
            try await browser.executeString(
                "return Array.from(document.querySelectorAll('.scopes code')).map(c => c.textContent).join(' ')")
                == "openid")
        if let screenshot {
            try await PageScreenshots.capture(browser, screenshot)
        } else {
            let severe = try await browser.consoleLog().filter { $0.hasPrefix("SEVERE") }
            #expect(severe == [], "console errors or CSP violations on the consent page")
        }
        try await browser.waitUntil("Allow has the focus (autofocus)") {
            try await browser.executeString("return document.activeElement.value") == "allow"
        }
        try await browser.press([BrowserSession.tab])
        #expect(try await browser.executeString("return document.activeElement.value") == "deny")
        try await browser.click(try await browser.find("button[value=allow]"))
    }

    /// Every visible input has a `<label for>`, the page has a language and a title, and Tab walks
    /// the form in order: each input, then the submit button.
    func checkAccessibility(_ browser: BrowserSession, inputs: [String]) async throws {
        let fields =
            try await browser.execute(
                """
                return Array.from(document.querySelectorAll('input:not([type=hidden])')).map(input =>
                    input.id && document.querySelector('label[for="' + CSS.escape(input.id) + '"]') ? input.id : 'UNLABELLED:' + input.name);
                """) as? [String]
        #expect(fields == inputs)
        #expect(try await browser.executeString("return document.documentElement.lang") == "en")
        #expect(try await browser.executeString("return document.title").isEmpty == false)

        try await browser.waitUntil("the first field has the focus (autofocus)") {
            try await browser.executeString("return document.activeElement.id") == inputs[0]
        }
        for next in inputs.dropFirst() {
            try await browser.press([BrowserSession.tab])
            #expect(
                try await browser.executeString("return document.activeElement.id") == next, "Tab should reach #\(next)"
            )
        }
        try await browser.press([BrowserSession.tab])
        #expect(
            try await browser.executeString("return document.activeElement.tagName + ':' + document.activeElement.type")
                == "BUTTON:submit")
    }

    func waitForPage(_ browser: BrowserSession, title: String) async throws {
        try await browser.waitUntil("the page \"\(title)\" is shown") {
            try await browser.executeString("return document.readyState === 'complete' ? document.title : ''")
                .hasPrefix(title)
        }
    }

    /// One authorization request's PKCE verifier and state.
    struct AuthorizationAttempt {
        let state: String
        let verifier = PKCE.generateVerifier()
    }

    private func authorizeURL(_ attempt: AuthorizationAttempt, extra: [(String, String)] = []) -> String {
        "\(endpoints.issuer)/authorize?"
            + DemoHTTP.form(
                [
                    ("response_type", "code"), ("client_id", clientID), ("redirect_uri", callback.redirectURI),
                    ("scope", "openid"),
                    ("state", attempt.state), ("code_challenge", PKCE.s256Challenge(for: attempt.verifier)),
                    ("code_challenge_method", "S256"),
                ] + extra)
    }

    /// The callback carries this attempt's state and our issuer (RFC 9207), and its code buys tokens.
    private func redeem(_ query: [String: String], for attempt: AuthorizationAttempt) async throws {
        #expect(query["state"] == attempt.state)
        #expect(query["iss"] == endpoints.issuer)
        let code = try required(query["code"], "code in the callback \(query)")
        let tokens = try expect(
            try await http.postForm(
                endpoints.tokenEndpoint,
                [
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", callback.redirectURI),
                    ("client_id", clientID), ("code_verifier", attempt.verifier),
                ]), 200, "exchange the code from the browser")
        #expect(tokens.json["access_token"] as? String != nil)
        #expect(tokens.json["id_token"] as? String != nil)
    }
}
