import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// Upstream OpenID Connect federation against a second tenant of the same, really listening token
/// service acting as the provider: discovery, JWKS and the code exchange all go over loopback HTTP.
@Suite struct FederationFlowTests {
    /// Tenant A (the fixture's) federating to tenant `upstream` through provider `up`.
    struct Setup {
        let fixture: TokenServiceHarness
        let upstream: TokenServiceHarness
        let app: NativeApp
        let upstreamUser: UUID
    }

    /// Runs `body` with tenant A, the upstream tenant (confidential client + password user `alice`) and A's app.
    /// `sealedSecret`: the provider's client secret is stored sealed (as a tenant admin's policy update
    /// stores it) instead of read from an operator-allowed file reference.
    static func withFederation(
        upstreamPolicy: String = "{}", sealedSecret: Bool = false,
        _ body: @Sendable (any TestClientProtocol, Setup) async throws -> Void
    ) async throws {
        let upstreamTenant = TestEnvironment.uniqueTenant("up")
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "latchkey-up-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: secretFile) }
        try await TokenServiceHarness.runListening(policy: { origin in
            """
            {"upstream_identity_providers": [{"id": "up", "display_name": "Upstream Corp",
              "issuer": "\(origin)/t/\(upstreamTenant)", "client_id": "latchkey-a",
              \(sealedSecret ? "" : #""client_secret_ref": "file:\#(secretFile.path)","#) "scopes": ["openid", "profile"]}]}
            """
        }) { client, fixture in
            try await TestDatabase.createTenant(upstreamTenant, in: fixture.database, policy: upstreamPolicy)
            let upstream = fixture.other(upstreamTenant)
            let secret = try #require(
                try await upstream.insertClient(
                    "latchkey-a", grantTypes: [.authorizationCode], scope: "openid profile",
                    redirectURIs: ["\(fixture.issuer)/auth/up/callback"], isStatic: true, applicationType: .web,
                    firstParty: true))
            try Data((secret + "\n").utf8).write(to: secretFile)
            if sealedSecret {
                let sealed = try KeyEnvelope(configuration: TestEnvironment.keyEncryptionKey).seal(
                    Data(secret.utf8),
                    associatedData: UpstreamIdentityProvider.sealedSecretContext(tenant: fixture.tenant, provider: "up")
                )
                try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                    try await connection.query(
                        "INSERT INTO upstream_client_secrets (tenant_id, provider_id, sealed) VALUES (\(fixture.tenant), 'up', \(sealed))",
                        logger: fixture.database.logger)
                }
            }
            let user = try await upstream.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            let app = try await fixture.insertPublicApp()
            try await body(client, Setup(fixture: fixture, upstream: upstream, app: app, upstreamUser: user))
        }
    }

    /// The path and query of an absolute URL on the service (the test client speaks to its one origin).
    static func path(_ url: String?) throws -> String {
        let components = try #require(url.flatMap { URLComponents(string: $0) })
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// A's /authorize → "Continue with" → upstream /authorize → upstream sign-in; returns the redirect to A's callback.
    static func toCallback(_ browser: inout PageBrowser, _ setup: Setup, verifier: String) async throws -> PageResponse
    {
        let fixture = setup.fixture
        let page = try await browser.get(
            AuthorizeRequest.path(fixture, clientID: setup.app.clientID, verifier: verifier))
        #expect(page.status == 200)
        let link = try #require(page.body.range(of: "class=\"provider\" href=\""))
        let href = String(page.body[link.upperBound...].prefix { $0 != "\"" })
        #expect(page.body.contains("Continue with Upstream Corp"))
        #expect(href.hasPrefix("/t/\(fixture.tenant)/auth/up?authorization_request="))
        let start = try await browser.get(href)
        #expect(start.status == 302, "\(start.body)")
        #expect(start.location?.hasPrefix("\(setup.upstream.issuer)/authorize?") == true)
        let upstreamPage = try await browser.get(try path(start.location))
        #expect(upstreamPage.status == 200, "\(upstreamPage.body)")
        let signedIn = try await browser.post(
            "/t/\(setup.upstream.tenant)/login",
            form: [
                ("csrf_token", try #require(upstreamPage.field("csrf_token"))),
                ("authorization_request", try #require(upstreamPage.field("authorization_request"))),
                ("username", "alice"), ("password", AuthorizeFlowTests.password),
            ])
        #expect(signedIn.status == 302, "\(signedIn.body)")
        #expect(signedIn.location?.hasPrefix("\(fixture.issuer)/auth/up/callback?code=") == true)
        return signedIn
    }

    @Test func federatedSignInProvisionsTheUserOnceAndIssuesTokens() async throws {
        try await Self.withFederation { client, setup in
            let fixture = setup.fixture
            var browser = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let page = try await browser.get(
                AuthorizeRequest.path(fixture, clientID: setup.app.clientID, verifier: verifier))
            let href = String(
                page.body[try #require(page.body.range(of: "class=\"provider\" href=\"")).upperBound...].prefix {
                    $0 != "\""
                })
            let start = try await browser.get(href)
            let cookie = try #require(start.setCookie(FederationCookie.name))
            for attribute in ["HttpOnly", "SameSite=Lax", "Path=/t/\(fixture.tenant)/auth", "Max-Age=600"] {
                #expect(cookie.contains(attribute), "\(cookie)")
            }
            #expect(!cookie.contains("Secure"), "the public URL is http here")
            let location = try #require(start.location)
            let query = try #require(URLComponents(string: location)?.queryItems)
            let parameters = Dictionary(query.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
            #expect(parameters["response_type"] == "code" && parameters["client_id"] == "latchkey-a")
            #expect(parameters["redirect_uri"] == "\(fixture.issuer)/auth/up/callback")
            #expect(parameters["code_challenge_method"] == "S256" && parameters["scope"] == "openid profile")
            #expect(parameters["state"] != nil && parameters["nonce"] != nil && parameters["code_challenge"] != nil)
            // The cookie is sealed: none of what it guards is readable in it.
            let sealed = try #require(browser.cookies[FederationCookie.name])
            #expect(!sealed.contains(try #require(parameters["state"])))

            var flow = PageBrowser(client)
            let toCallback = try await Self.toCallback(&flow, setup, verifier: verifier)
            let done = try await flow.get(try Self.path(toCallback.location))
            #expect(done.status == 302, "\(done.body)")
            #expect(done.location?.hasPrefix("com.example.app:/cb?code=") == true)
            #expect(done.redirectParameters["state"] == "st-123" && done.redirectParameters["iss"] == fixture.issuer)
            #expect(done.setCookie(SSOSessions.cookieName) != nil)
            #expect(flow.cookies[FederationCookie.name] == nil, "the federation cookie is cleared")
            let (status, json) = try await setup.app.redeem(
                client, fixture, code: try #require(done.redirectParameters["code"]), verifier: verifier)
            #expect(status == 200, "\(json)")
            let claims = try await fixture.verifyAccessToken(
                try #require(json["access_token"] as? String), client: client)
            let subject = setup.upstreamUser.uuidString.lowercased()
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM external_identities WHERE provider = 'up' AND provider_user_id = '\(subject)' AND user_id::text = '\(claims.sub)'"
                ) == 1)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM users WHERE username = 'up:\(subject)'") == 1)
            let events = try await fixture.outboxPayloads(type: .userRegistered)
            #expect(events.count == 1)
            let event = try CloudEvent<UserRegistered>.decode(from: Data(events[0].utf8))
            #expect(
                event.data.method == .upstream && event.data.provider == "up"
                    && event.data.clientID == setup.app.clientID)

            // Replaying the callback: the cookie is gone, so it is refused.
            let replay = try await flow.get(try Self.path(toCallback.location))
            #expect(replay.status == 400)

            // A second federation of the same upstream account (new browser) reuses the same user.
            var again = PageBrowser(client)
            let second = try await Self.toCallback(&again, setup, verifier: verifier)
            let secondDone = try await again.get(try Self.path(second.location))
            #expect(secondDone.status == 302)
            let (secondStatus, secondJSON) = try await setup.app.redeem(
                client, fixture, code: try #require(secondDone.redirectParameters["code"]), verifier: verifier)
            #expect(secondStatus == 200)
            let secondClaims = try await fixture.verifyAccessToken(
                try #require(secondJSON["access_token"] as? String), client: client)
            #expect(secondClaims.sub == claims.sub)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM users") == 1)
            #expect(try await fixture.outboxPayloads(type: .userRegistered).count == 1)
        }
    }

    @Test(arguments: [JWSAlgorithm.rs256, .edDSA])
    func upstreamsSigningIDTokensWithRS256OrEdDSAFederate(algorithm: JWSAlgorithm) async throws {
        try await Self.withFederation(
            upstreamPolicy: #"{"signing_algorithm":"\#(algorithm.rawValue)"}"#, sealedSecret: true
        ) { client, setup in
            var flow = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let toCallback = try await Self.toCallback(&flow, setup, verifier: verifier)
            let done = try await flow.get(try Self.path(toCallback.location))
            #expect(done.status == 302, "\(done.body)")
            // The upstream signed its ID token with its tenant key of that algorithm, and tenant A accepted it.
            #expect(try await setup.upstream.jwks(client).keys.map(\.alg) == [algorithm.rawValue])
            let (status, json) = try await setup.app.redeem(
                client, setup.fixture, code: try #require(done.redirectParameters["code"]), verifier: verifier)
            #expect(status == 200, "\(json)")
            #expect(
                try await setup.fixture.count("SELECT count(*)::int8 FROM external_identities WHERE provider = 'up'")
                    == 1)
        }
    }

    @Test func concurrentFirstCallbacksCreateOneUser() async throws {
        try await Self.withFederation { client, setup in
            var first = PageBrowser(client)
            var second = PageBrowser(client)
            let verifier = PKCE.generateVerifier()
            let callbackA = try Self.path(try await Self.toCallback(&first, setup, verifier: verifier).location)
            let callbackB = try Self.path(try await Self.toCallback(&second, setup, verifier: verifier).location)
            let (browserA, browserB) = (first, second)
            async let resultA = {
                var browser = browserA
                return try await browser.get(callbackA)
            }()
            async let resultB = {
                var browser = browserB
                return try await browser.get(callbackB)
            }()
            let (doneA, doneB) = try await (resultA, resultB)
            #expect(doneA.status == 302 && doneB.status == 302, "\(doneA.body) \(doneB.body)")
            #expect(doneA.redirectParameters["code"] != nil && doneB.redirectParameters["code"] != nil)
            #expect(try await setup.fixture.count("SELECT count(*)::int8 FROM users") == 1)
            #expect(try await setup.fixture.count("SELECT count(*)::int8 FROM external_identities") == 1)
            #expect(try await setup.fixture.outboxPayloads(type: .userRegistered).count == 1)
        }
    }

    @Test func tamperedCookieWrongStateAndProviderErrorsAreRefused() async throws {
        try await Self.withFederation { client, setup in
            let fixture = setup.fixture
            var browser = PageBrowser(client)
            let callback = try Self.path(
                try await Self.toCallback(&browser, setup, verifier: PKCE.generateVerifier()).location)
            let sealed = try #require(browser.cookies[FederationCookie.name])

            var tampered = browser
            let flipped: Character = sealed.last == "A" ? "B" : "A"
            tampered.cookies[FederationCookie.name] = String(sealed.dropLast()) + String(flipped)
            let forged = try await tampered.get(callback)
            #expect(forged.status == 400)
            #expect(forged.body.contains("expired or is invalid"))

            var cookieless = browser
            cookieless.cookies[FederationCookie.name] = nil
            #expect(try await cookieless.get(callback).status == 400)

            var wrongState = browser
            let components = try #require(URLComponents(string: callback))
            var items = try #require(components.queryItems).filter { $0.name != "state" }
            items.append(URLQueryItem(name: "state", value: SecretTokens.generate()))
            var altered = components
            altered.queryItems = items
            let badState = try await wrongState.get(try #require(altered.string))
            #expect(badState.status == 400)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM users") == 0)

            // Duplicated parameters are refused as a malformed request.
            var duplicated = browser
            #expect(try await duplicated.get(callback + "&code=again").status == 400)

            // The user declined at the provider: the client gets access_denied with its own state.
            let realState = try #require(components.queryItems?.first { $0.name == "state" }?.value)
            var declined = browser
            let denied = try await declined.get(
                "/t/\(fixture.tenant)/auth/up/callback?error=access_denied&state=\(AuthorizationResponseTarget.encode(realState))"
            )
            #expect(denied.status == 302)
            #expect(denied.location?.hasPrefix("com.example.app:/cb?error=access_denied") == true)
            #expect(denied.redirectParameters["state"] == "st-123")

            // An unknown provider and a start without a sealed request get error pages.
            var other = PageBrowser(client)
            #expect(try await other.get("/t/\(fixture.tenant)/auth/nope?authorization_request=x").status == 404)
            #expect(try await other.get("/t/\(fixture.tenant)/auth/up?authorization_request=forged").status == 400)
            #expect(try await other.get("/t/\(fixture.tenant)/auth/up").status == 400)
        }
    }
}
