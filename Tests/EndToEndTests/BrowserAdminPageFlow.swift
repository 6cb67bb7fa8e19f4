import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// The authorize error page and the gateway's admin page in the browser.
extension BrowserFlows {
    /// A redirect URI the client never registered gets the error page (never a redirect).
    func authorizeErrorPage(_ browser: BrowserSession) async throws {
        let url =
            "\(endpoints.issuer)/authorize?"
            + DemoHTTP.form([
                ("response_type", "code"), ("client_id", clientID), ("redirect_uri", "http://127.0.0.1:1/elsewhere"),
                ("state", "s"), ("code_challenge", PKCE.s256Challenge(for: PKCE.generateVerifier())),
                ("code_challenge_method", "S256"),
            ])
        try await browser.navigate(url)
        try await waitForPage(browser, title: "Sign-in problem")
        #expect(try await browser.currentURL().hasPrefix(endpoints.issuer))
        try await PageScreenshots.capture(browser, "authorize-error", documentStatus: 400)
    }

    /// An administrator signs in on the admin page with the keyboard, finds an instance whose name is
    /// markup, revokes it with a reason, and the instance is revoked everywhere (RFC 7592 read fails).
    func adminRevokesAnInstance(_ browser: BrowserSession) async throws {
        let adminToken = try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
        let iat = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/\(endpoints.tenant)/initial-access-tokens",
                #"{"uses":1,"expires_in":600}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]), 201, "mint an initial access token")
        let hostileName = #"<img src=x onerror="window.__x=1"> Stolen phone"#
        let metadata = try String(
            decoding: JSONSerialization.data(withJSONObject: [
                "client_name": hostileName, "redirect_uris": ["com.example.stolen:/cb"],
                "token_endpoint_auth_method": "none",
            ]), as: UTF8.self)
        let registered = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/\(endpoints.tenant)/register", metadata,
                headers: [
                    ("Authorization", "Bearer \(try required(iat.json["initial_access_token"] as? String, "IAT"))")
                ]),
            201, "register the instance")
        let instance = try required(registered.json["client_id"] as? String, "client_id")
        let registrationToken = try required(
            registered.json["registration_access_token"] as? String, "registration token")

        let admin = "\(endpoints.gateway)/admin/t/\(endpoints.tenant)"
        try await browser.navigate(admin)
        try await waitForPage(browser, title: "Sign in")
        #expect(try await browser.currentURL() == "\(admin)/sign-in", "the list asks for a sign-in first")
        try await checkAccessibility(browser, inputs: ["client_id", "client_secret"])
        try await PageScreenshots.capture(browser, "admin-sign-in")
        try await browser.type(try await browser.find("#client_id"), credentials.adminClientID)
        try await browser.type(
            try await browser.find("#client_secret"), credentials.adminClientSecret + BrowserSession.enter)
        try await waitForPage(browser, title: "Instances")
        let session = try required(
            try await browser.cookies().first { $0["name"] as? String == "__Host-latchkey_admin" },
            "the admin session cookie")
        #expect(session["httpOnly"] as? Bool == true && session["secure"] as? Bool == true)
        #expect(session["sameSite"] as? String == "Strict" && session["path"] as? String == "/")
        #expect(try await browser.executeString("return document.cookie") == "")
        // The table is labelled for screen readers, the hostile name is text.
        #expect(
            try await browser.execute(
                """
                return document.querySelector('table caption') !== null
                    && document.querySelectorAll('thead th[scope=col]').length === 8
                    && document.querySelectorAll('tbody th[scope=row]').length > 0
                    && Array.from(document.querySelectorAll('input:not([type=hidden]), select')).every(input =>
                        input.id && document.querySelector('label[for="' + CSS.escape(input.id) + '"]'))
                """) as? Bool == true)
        #expect(
            try await browser.execute("return window.__x === undefined && document.images.length === 0") as? Bool
                == true)
        #expect(try await browser.executeString("return document.body.innerText").contains(hostileName))
        try await PageScreenshots.capture(browser, "admin-instances")

        // Revoke with the keyboard: type the reason, Enter submits the row's form.
        let reason = try await browser.find("form[action$='/clients/\(instance)/revoke'] input[name=reason]")
        try await browser.type(reason, "device stolen (browser test)" + BrowserSession.enter)
        try await browser.waitUntil("the flash message confirms the revocation") {
            try await browser.execute("const f = document.querySelector('.flash'); return f ? f.textContent : ''")
                as? String
                == "Instance \(instance) revoked."
        }
        #expect(try await browser.currentURL() == admin, "the post redirected back to the list (303)")
        try await PageScreenshots.capture(browser, "admin-after-revoke")

        let read = try await http.get(
            "\(endpoints.gateway)/t/\(endpoints.tenant)/register/\(instance)",
            headers: [("Authorization", "Bearer \(registrationToken)")])
        #expect(read.status == 401, "RFC 7592 read still works after the revocation")
        let stored = try expect(
            try await http.get(
                "\(endpoints.gateway)/admin/tenants/\(endpoints.tenant)/clients/\(instance)",
                headers: [("Authorization", "Bearer \(adminToken)")]),
            200, "read the revoked instance")
        #expect(stored.json["status"] as? String == "revoked")
    }
}
