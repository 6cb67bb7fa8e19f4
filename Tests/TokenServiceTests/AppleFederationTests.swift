import AsyncHTTPClient
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

/// Federation with providers shaped like Sign in with Apple: `form_post` responses, a generated ES256
/// client-secret JWT, `client_secret_post` and `private_key_jwt`, and `idp_hint`. The token service runs
/// on real sockets; the provider is an ``AppleShapedProvider`` on another loopback port.
@Suite struct AppleFederationTests {
    static let clientID = "com.example.latchkey"

    struct Setup {
        let fixture: TokenServiceHarness
        let provider: AppleShapedProvider
        let app: NativeApp
    }

    /// Runs `body` with tenant A federating to `provider` as `apple`; `settings` is the provider entry's
    /// credential members, and `credential` what the gateway would have sealed for it.
    static func withApple(
        _ authentication: AppleShapedProvider.ClientAuthentication, settings: String,
        credential: (UpstreamCredentialKind, Data), responseMode: String = "form_post",
        _ body: @Sendable (any TestClientProtocol, Setup) async throws -> Void
    ) async throws {
        let provider = try AppleShapedProvider(clientID: clientID, authentication: authentication)
        try await withLoopbackServer(provider.router()) { port in
            await provider.started(port: port)
            let policy = """
                {"upstream_identity_providers": [{"id": "apple", "display_name": "Apple",
                  "issuer": "http://127.0.0.1:\(port)", "client_id": "\(clientID)", "response_mode": "\(responseMode)",
                  \(settings), "scopes": ["openid", "name", "email"]}]}
                """
            try await TokenServiceHarness.run(policy: policy, setup: .live) { client, fixture in
                let sealed = try KeyEnvelope(configuration: TestEnvironment.keyEncryptionKey).seal(
                    credential.1,
                    associatedData: UpstreamIdentityProvider.sealedCredentialContext(
                        credential.0, tenant: fixture.tenant, provider: "apple"))
                try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                    try await connection.query(
                        """
                        INSERT INTO upstream_client_secrets (tenant_id, provider_id, sealed, kind)
                        VALUES (\(fixture.tenant), 'apple', \(sealed), \(credential.0.rawValue))
                        """, logger: fixture.database.logger)
                }
                let app = try await fixture.insertPublicApp()
                try await body(client, Setup(fixture: fixture, provider: provider, app: app))
            }
        }
    }

    /// The Apple-style client secret set-up: a P-256 key, its key id and the team id.
    static func appleClientSecret() throws -> (
        AppleShapedProvider.ClientAuthentication, String, (UpstreamCredentialKind, Data)
    ) {
        let key = try SigningKey.generate(.es256)
        return (
            .appleClientSecret(key: key.publicKey, keyID: "ABC123DEFG", teamID: "TEAM123456", audience: nil),
            #""token_endpoint_auth_method": "client_secret_post", "client_secret_jwt": {"key_id": "ABC123DEFG", "team_id": "TEAM123456"}"#,
            (.clientSecretJWTKey, key.pkcs8DERRepresentation)
        )
    }

    /// The provider's auto-submitting form: its action and its hidden fields, unescaped.
    struct UpstreamForm {
        let action: String
        let fields: [(String, String)]
    }

    /// What a browser gets from the provider's authorization endpoint (over HTTP, as the browser would).
    static func upstreamForm(_ url: String) async throws -> UpstreamForm {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        let page = String(buffer: try await response.body.collect(upTo: 64 * 1024))
        func unescape(_ text: Substring) -> String {
            text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
                .replacingOccurrences(of: "&amp;", with: "&")
        }
        func attribute(_ name: String, in tag: Substring) -> String? {
            guard let start = tag.range(of: "\(name)=\"") else { return nil }
            return unescape(tag[start.upperBound...].prefix { $0 != "\"" })
        }
        let action = try #require(attribute("action", in: page[...]), "\(page)")
        let fields = page.components(separatedBy: "<input ").dropFirst().compactMap { tag -> (String, String)? in
            guard let name = attribute("name", in: tag[...]), let value = attribute("value", in: tag[...]) else {
                return nil
            }
            return (name, value)
        }
        return UpstreamForm(action: action, fields: fields)
    }

    /// /authorize with `idp_hint` → federation start → the provider's form; returns the form.
    static func toProviderForm(_ browser: inout PageBrowser, _ setup: Setup, verifier: String) async throws
        -> UpstreamForm
    {
        let fixture = setup.fixture
        let hinted = try await browser.get(
            AuthorizeRequest.path(
                fixture, clientID: setup.app.clientID, verifier: verifier, extra: [("idp_hint", "apple")]))
        #expect(hinted.status == 302, "\(hinted.body)")
        #expect(hinted.location?.hasPrefix("/t/\(fixture.tenant)/auth/apple?authorization_request=") == true)
        let start = try await browser.get(try FederationFlowTests.path(hinted.location))
        #expect(start.status == 302, "\(start.body)")
        let location = try #require(start.location)
        #expect(location.contains("response_mode=form_post"))
        #expect(browser.cookies[FederationCookie.name] != nil)
        return try await upstreamForm(location)
    }

    /// The provider's form posted as a browser posts it cross-site: without our SameSite=Lax cookies.
    static func crossSitePost(_ client: any TestClientProtocol, _ form: UpstreamForm) async throws -> PageResponse {
        var crossSite = PageBrowser(client)
        return try await crossSite.post(try FederationFlowTests.path(form.action), form: form.fields)
    }

    @Test func signInWithAppleFormPostAndClientSecretJWT() async throws {
        let (authentication, settings, credential) = try Self.appleClientSecret()
        try await Self.withApple(authentication, settings: settings, credential: credential) { client, setup in
            let fixture = setup.fixture
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let form = try await Self.toProviderForm(&browser, setup, verifier: verifier)
            #expect(form.action == "\(fixture.issuer)/auth/apple/callback")

            let posted = try await Self.crossSitePost(client, form)
            #expect(posted.status == 303, "\(posted.body)")
            #expect(posted.setCookie(FederationCookie.name) == nil, "the cross-site POST leaves the state cookie alone")
            let handoff = try #require(posted.location)
            #expect(handoff.hasPrefix("\(fixture.issuer)/auth/apple/callback?form_post="))
            // The handoff is sealed: neither the code nor the user's name is readable in the URL.
            let code = try #require(form.fields.first { $0.0 == "code" }?.1)
            #expect(!handoff.contains(code) && !handoff.contains("Appleseed"))

            let done = try await browser.get(try FederationFlowTests.path(handoff))
            #expect(done.status == 302, "\(done.body)")
            #expect(done.location?.hasPrefix("com.example.app:/cb?code=") == true)
            #expect(done.redirectParameters["state"] == "st-123")
            #expect(browser.cookies[FederationCookie.name] == nil, "the federation cookie is cleared")
            #expect(await setup.provider.exchanges == 1)
            #expect(await setup.provider.refusals.isEmpty)

            let (status, json) = try await setup.app.redeem(
                client, fixture, code: try #require(done.redirectParameters["code"]), verifier: verifier)
            #expect(status == 200, "\(json)")
            let access = try #require(json["access_token"] as? String)
            let (infoStatus, info) = try await client.execute(
                uri: "/t/\(fixture.tenant)/userinfo", method: .get,
                headers: [
                    .authorization: "DPoP \(access)",
                    HTTPField.Name("DPoP")!: try setup.app.dpop.proof(
                        method: "GET", url: "\(fixture.issuer)/userinfo", accessToken: access),
                ]
            ) { response in (Int(response.status.code), TokenRequest.json(response)) }
            #expect(infoStatus == 200, "\(info)")
            // Apple's one-time `user` member named the account; its ID token vouched for the address.
            #expect(info["name"] as? String == "Jane Appleseed")
            let subject = await setup.provider.subject
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM users u JOIN external_identities e USING (tenant_id, user_id) WHERE e.provider = 'apple' AND e.provider_user_id = '\(subject)' AND u.email = 'jane@privaterelay.example' AND u.email_verified"
                ) == 1)

            // Replaying the handoff: the cookie is gone.
            var replay = browser
            #expect(try await replay.get(try FederationFlowTests.path(handoff)).status == 400)
        }
    }

    @Test func formPostErrorReachesTheClientAsAccessDenied() async throws {
        let (authentication, settings, credential) = try Self.appleClientSecret()
        try await Self.withApple(authentication, settings: settings, credential: credential) { client, setup in
            var browser = PageBrowser(client)
            let form = try await Self.toProviderForm(&browser, setup, verifier: PKCE.generateVerifier())
            let state = try #require(form.fields.first { $0.0 == "state" }?.1)
            let posted = try await Self.crossSitePost(
                client,
                UpstreamForm(action: form.action, fields: [("error", "user_cancelled_authorize"), ("state", state)]))
            #expect(posted.status == 303)
            let done = try await browser.get(try FederationFlowTests.path(posted.location))
            #expect(done.status == 302, "\(done.body)")
            #expect(done.location?.hasPrefix("com.example.app:/cb?error=access_denied") == true)
            #expect(done.redirectParameters["state"] == "st-123")
            #expect(await setup.provider.exchanges == 0)
        }
    }

    /// Login CSRF: an attacker's own code and state, posted through the victim's browser, do not sign the
    /// victim in — the state is bound to the browser that started the sign-in.
    @Test func formPostWithoutTheBrowsersStateBindingIsRefused() async throws {
        let (authentication, settings, credential) = try Self.appleClientSecret()
        try await Self.withApple(authentication, settings: settings, credential: credential) { client, setup in
            let fixture = setup.fixture
            var attacker = PageBrowser(client)
            let attackersForm = try await Self.toProviderForm(&attacker, setup, verifier: PKCE.generateVerifier())

            // The victim has no sign-in in progress.
            let forced = try await Self.crossSitePost(client, attackersForm)
            #expect(forced.status == 303)
            var victim = PageBrowser(client)
            let refused = try await victim.get(try FederationFlowTests.path(forced.location))
            #expect(refused.status == 400, "\(refused.body)")

            // The victim has one of their own in progress: its state does not match the attacker's.
            var busyVictim = PageBrowser(client)
            _ = try await Self.toProviderForm(&busyVictim, setup, verifier: PKCE.generateVerifier())
            let again = try await Self.crossSitePost(client, attackersForm)
            let mismatched = try await busyVictim.get(try FederationFlowTests.path(again.location))
            #expect(mismatched.status == 400, "\(mismatched.body)")

            // A form_post provider's response is only taken from the handoff: the attacker's code and state
            // in the query are refused even with the attacker's own cookie.
            let state = try #require(attackersForm.fields.first { $0.0 == "state" }?.1)
            let code = try #require(attackersForm.fields.first { $0.0 == "code" }?.1)
            let query = try await attacker.get(
                "/t/\(fixture.tenant)/auth/apple/callback?code=\(code)&state=\(AuthorizationResponseTarget.encode(state))"
            )
            #expect(query.status == 400)
            // A forged handoff does not open.
            var forger = PageBrowser(client)
            _ = try await Self.toProviderForm(&forger, setup, verifier: PKCE.generateVerifier())
            let forged = try await forger.get("/t/\(fixture.tenant)/auth/apple/callback?form_post=AAAA\(code)")
            #expect(forged.status == 400)

            #expect(await setup.provider.exchanges == 0)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM users") == 0)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM external_identities") == 0)
        }
    }

    @Test(arguments: [JWSAlgorithm.es256, .rs256])
    func privateKeyJWTAuthenticatesTheCodeExchange(algorithm: JWSAlgorithm) async throws {
        let key = try SigningKey.generate(algorithm)
        let jwk = key.publicJWK(kid: "latchkey-1")
        try await Self.withApple(
            .privateKeyJWT(key: jwk),
            settings: #""token_endpoint_auth_method": "private_key_jwt", "private_key_jwt": {"key_id": "latchkey-1"}"#,
            credential: (.privateKeyJWTKey, key.pkcs8DERRepresentation)
        ) { client, setup in
            var browser = PageBrowser(client)
            let form = try await Self.toProviderForm(&browser, setup, verifier: PKCE.generateVerifier())
            let posted = try await Self.crossSitePost(client, form)
            let done = try await browser.get(try FederationFlowTests.path(posted.location))
            #expect(done.status == 302, "\(done.body)")
            #expect(done.location?.hasPrefix("com.example.app:/cb?code=") == true)
            #expect(await setup.provider.refusals.isEmpty)
            #expect(await setup.provider.exchanges == 1)

            // A provider that knows another public key refuses the assertion, and the user sees an error page.
            await setup.provider.authenticate(
                with: .privateKeyJWT(key: try SigningKey.generate(algorithm).publicJWK(kid: "latchkey-1")))
            var other = PageBrowser(client)
            let otherForm = try await Self.toProviderForm(&other, setup, verifier: PKCE.generateVerifier())
            let otherPost = try await Self.crossSitePost(client, otherForm)
            let failed = try await other.get(try FederationFlowTests.path(otherPost.location))
            #expect(failed.status == 502, "\(failed.body)")
            #expect(await setup.provider.refusals == ["client assertion signature"])
        }
    }

    @Test func clientSecretPostSendsTheSecretInTheBody() async throws {
        let secret = "apple-post-" + SecretTokens.generate()
        try await Self.withApple(
            .post(secret: secret), settings: #""token_endpoint_auth_method": "client_secret_post""#,
            credential: (.clientSecret, Data(secret.utf8))
        ) { client, setup in
            var browser = PageBrowser(client)
            let form = try await Self.toProviderForm(&browser, setup, verifier: PKCE.generateVerifier())
            let posted = try await Self.crossSitePost(client, form)
            let done = try await browser.get(try FederationFlowTests.path(posted.location))
            #expect(done.status == 302, "\(done.body)")
            #expect(await setup.provider.refusals.isEmpty)
            #expect(await setup.provider.exchanges == 1)
        }
    }

    @Test func idpHintSkipsTheChooserOnlyForAConfiguredProvider() async throws {
        let (authentication, settings, credential) = try Self.appleClientSecret()
        try await Self.withApple(authentication, settings: settings, credential: credential) { client, setup in
            let fixture = setup.fixture
            let verifier = PKCE.generateVerifier()
            var browser = PageBrowser(client)
            let keycloakStyle = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: setup.app.clientID, verifier: verifier, extra: [("kc_idp_hint", "apple")]))
            #expect(keycloakStyle.status == 302)
            #expect(keycloakStyle.location?.hasPrefix("/t/\(fixture.tenant)/auth/apple?authorization_request=") == true)
            // An unknown provider shows the sign-in page with its "Continue with" links, as without a hint.
            let unknown = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: setup.app.clientID, verifier: verifier, extra: [("idp_hint", "google")]))
            #expect(unknown.status == 200)
            #expect(unknown.body.contains("Continue with Apple"))
            // The hint does not bypass request validation: a bad request still fails as usual.
            let invalid = try await browser.get(
                AuthorizeRequest.path(
                    fixture, clientID: "nobody", verifier: verifier, extra: [("idp_hint", "apple")]))
            #expect(invalid.status == 400)
        }
    }

    @Test func aQueryModeProviderRefusesFormPosts() async throws {
        let (authentication, settings, credential) = try Self.appleClientSecret()
        try await Self.withApple(authentication, settings: settings, credential: credential, responseMode: "query") {
            client, setup in
            var browser = PageBrowser(client)
            let posted = try await browser.post(
                "/t/\(setup.fixture.tenant)/auth/apple/callback", form: [("code", "x"), ("state", "y")])
            #expect(posted.status == 400)
        }
    }
}
