import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// /authorize request checks: what renders a page (never a redirect) and what redirects with an error.
@Suite struct AuthorizeValidationTests {
    @Test func untrustedClientOrRedirectURIGetsAnHTMLPageAndNeverARedirect() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertPublicApp("gone")
            try await fixture.setClientStatus("gone", .revoked)
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let cases: [String] = [
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, redirectURI: "com.example.app:/other", verifier: verifier),
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, redirectURI: "https://evil.example/cb", verifier: verifier),
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, omit: ["redirect_uri"]),
                AuthorizeRequest.path(fixture, clientID: "nobody", verifier: verifier),
                AuthorizeRequest.path(fixture, clientID: "gone", verifier: verifier),
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, omit: ["client_id"]),
                AuthorizeRequest.path(fixture, clientID: String(repeating: "c", count: 300), verifier: verifier),
                // Repeated parameters and bytes that are not UTF-8 cannot be trusted either.
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier) + "&client_id=app",
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier) + "&login_hint=%FF%FE",
                AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier) + "&login_hint=%zz",
            ]
            for path in cases {
                let response = try await browser.get(path)
                #expect(response.status == 400, "\(path)")
                #expect(response.location == nil, "\(path)")
                #expect(response.header("Content-Type") == "text/html; charset=utf-8")
                #expect(response.header("X-Frame-Options") == "DENY")
                #expect(response.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
            }
            let tooLong = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, verifier: verifier, state: String(repeating: "s", count: 20_000)))
            #expect(tooLong.status == 400 && tooLong.location == nil)
        }
    }

    @Test func loopbackRedirectAcceptsAnyPortOnly() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp(redirectURIs: ["http://127.0.0.1/cb", "http://[::1]/cb"])
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            for uri in ["http://127.0.0.1:53123/cb", "http://127.0.0.1/cb", "http://[::1]:8080/cb"] {
                let page = try await browser.get(
                    AuthorizeRequest.path(fixture, clientID: app.clientID, redirectURI: uri, verifier: verifier))
                #expect(page.status == 200, "\(uri)")
            }
            for uri in [
                "http://127.0.0.1:53123/other", "http://localhost:53123/cb", "https://127.0.0.1:53123/cb",
                "http://127.0.0.2:53123/cb", "http://127.0.0.1:53123/cb#frag",
            ] {
                let page = try await browser.get(
                    AuthorizeRequest.path(fixture, clientID: app.clientID, redirectURI: uri, verifier: verifier))
                #expect(page.status == 400 && page.location == nil, "\(uri)")
            }
        }
    }

    @Test func protocolErrorsRedirectWithErrorStateAndIss() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let challenge = PKCE.s256Challenge(for: verifier)
            let cases: [([(String, String)], Set<String>, String)] = [
                ([], ["code_challenge", "code_challenge_method"], "invalid_request"),
                ([("code_challenge_method", "plain"), ("code_challenge", verifier)], [], "invalid_request"),
                ([], ["code_challenge_method"], "invalid_request"),  // absent method means plain
                ([("code_challenge", "short")], [], "invalid_request"),
                ([("scope", "openid admin")], [], "invalid_scope"),
                ([("scope", "dcr")], [], "invalid_scope"),
                ([("response_type", "token")], [], "unsupported_response_type"),
                ([("response_type", "code id_token")], [], "unsupported_response_type"),
                ([], ["response_type"], "invalid_request"),
                ([("prompt", "none login")], [], "invalid_request"),
                ([("prompt", "bogus")], [], "invalid_request"),
                ([("dpop_jkt", "not-a-thumbprint")], [], "invalid_request"),
                ([("nonce", String(repeating: "n", count: 600))], [], "invalid_request"),
                ([("request", "eyJ.x.y")], [], "request_not_supported"),
                ([("code_challenge", challenge), ("response_mode", "fragment")], [], "invalid_request"),
            ]
            for (extra, omit, error) in cases {
                let response = try await browser.get(
                    AuthorizeRequest.path(fixture, clientID: app.clientID, verifier: verifier, extra: extra, omit: omit)
                )
                #expect(response.status == 302, "\(extra) \(omit)")
                #expect(response.location?.hasPrefix("com.example.app:/cb?error=") == true)
                let parameters = response.redirectParameters
                #expect(parameters["error"] == error, "\(extra) \(omit): \(parameters)")
                #expect(parameters["state"] == "st-123")
                #expect(parameters["iss"] == fixture.issuer)
                #expect(parameters["code"] == nil)
            }
            // A state too long to echo is not reflected.
            let long = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, verifier: verifier, state: String(repeating: "s", count: 1500)))
            #expect(long.redirectParameters["error"] == "invalid_request")
            #expect(long.redirectParameters["state"] == nil)
        }
    }

    @Test func plainIsAcceptedOnlyWhenThePolicyAllowsIt() async throws {
        try await TokenServiceHarness.run(policy: #"{"pkce":{"allow_plain":true}}"#) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let page = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: app.clientID, verifier: verifier,
                    extra: [("code_challenge", verifier), ("code_challenge_method", "plain")]))
            #expect(page.status == 200, "\(page.location ?? "")")
        }
    }

    @Test func codeCarriesDPoPJKTAndTheTokenEndpointEnforcesIt() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let other = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let redirect = try await AuthorizeFlowTests.signIn(
                &browser, fixture, app: app, verifier: verifier, extra: [("dpop_jkt", other.jkt)])
            let code = try #require(redirect.redirectParameters["code"])
            let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 400, "\(json)")
            #expect(json["error"] as? String == "invalid_dpop_proof")
            let (retry, retried) = try await app.redeem(
                client, fixture, code: code, verifier: verifier,
                proof: try other.proof(method: "POST", url: fixture.tokenURL))
            #expect(retry == 200, "\(retried)")
        }
    }

    @Test func discoveryAdvertisesTheAuthorizationEndpoint() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let json = try await client.execute(
                uri: "/t/\(fixture.tenant)/.well-known/openid-configuration", method: .get
            ) {
                TokenRequest.json($0)
            }
            #expect(json["authorization_endpoint"] as? String == "\(fixture.issuer)/authorize")
            #expect(json["response_types_supported"] as? [String] == ["code"])
            #expect(json["prompt_values_supported"] as? [String] == ["none", "login", "consent", "select_account"])
            #expect(json["authorization_response_iss_parameter_supported"] as? Bool == true)
        }
    }
}
