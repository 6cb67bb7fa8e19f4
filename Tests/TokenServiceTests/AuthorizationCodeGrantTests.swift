import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// A public native app as in the mobile story: PKCE and a DPoP key of its own.
struct NativeApp {
    let clientID: String
    let dpop: DPoPProofSigner

    init(clientID: String) throws {
        self.clientID = clientID
        self.dpop = DPoPProofSigner(key: try SigningKey.generate(.es256))
    }

    /// Redeems `code` at the token endpoint; returns the status and JSON body.
    func redeem(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, code: String, verifier: String?,
        redirectURI: String = "com.example.app:/cb", proof: String? = nil, withProof: Bool = true
    ) async throws -> (Int, [String: Any]) {
        var form = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
            ("client_id", clientID),
        ]
        if let verifier { form.append(("code_verifier", verifier)) }
        let dpopProof = withProof ? try (proof ?? dpop.proof(method: "POST", url: fixture.tokenURL)) : nil
        return try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(dpop: dpopProof),
            body: TokenRequest.form(form)
        ) { response in (Int(response.status.code), TokenRequest.json(response)) }
    }

    func refresh(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, token: String, signer: DPoPProofSigner? = nil,
        withProof: Bool = true
    ) async throws -> (Int, [String: Any]) {
        let proof = withProof ? try (signer ?? dpop).proof(method: "POST", url: fixture.tokenURL) : nil
        return try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(dpop: proof),
            body: TokenRequest.form([
                ("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", clientID),
            ])
        ) { response in (Int(response.status.code), TokenRequest.json(response)) }
    }
}

@Suite struct AuthorizationCodeGrantTests {
    static func publicApp(_ fixture: TokenServiceHarness, id: String = "app") async throws -> NativeApp {
        try await fixture.insertClient(
            id, authMethod: .noAuthentication, grantTypes: [.authorizationCode, .refreshToken],
            scope: "openid profile email",
            dpopBound: true)
        return try NativeApp(clientID: id)
    }

    @Test func pkceAndDPoPCodeFlowIssuesBoundTokensIDTokenAndRefresh() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await Self.publicApp(fixture)
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            let code = try await fixture.insertCode(
                clientID: app.clientID, userID: user, verifier: verifier, nonce: "n-0S6", dpopJKT: app.dpop.jkt)
            let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            #expect(json["token_type"] as? String == "DPoP")
            #expect(json["scope"] as? String == "openid profile")
            let access = try #require(json["access_token"] as? String)
            let claims = try await fixture.verifyAccessToken(access, client: client)
            #expect(claims.sub == user.uuidString.lowercased())
            #expect(claims.cnf?.jkt == app.dpop.jkt)
            #expect(claims.clientID == app.clientID)
            let idToken = try CompactJWS(parsing: try #require(json["id_token"] as? String))
            let idClaims = try idToken.claims(as: IDTokenClaims.self)
            #expect(idClaims.aud == app.clientID)
            #expect(idClaims.nonce == "n-0S6")
            #expect(idClaims.iss == fixture.issuer)
            #expect(json["refresh_token"] is String)
            let event = try CloudEvent<TokenIssued>.decode(
                from: Data(try await fixture.outboxPayloads(type: .tokenIssued)[0].utf8))
            #expect(event.data.jkt == app.dpop.jkt)
            #expect(event.data.tokenTypes == [.access, .refresh, .id])
            #expect(event.data.userID == user)
        }
    }

    @Test func replayedCodeIsRefusedAndRevokesWhatItIssued() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await Self.publicApp(fixture)
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            let code = try await fixture.insertCode(clientID: app.clientID, userID: user, verifier: verifier)
            let (first, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(first == 200)
            let refresh = try #require(json["refresh_token"] as? String)
            let (second, replay) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(second == 400)
            #expect(replay["error"] as? String == "invalid_grant")
            let (afterReplay, refreshed) = try await app.refresh(client, fixture, token: refresh)
            #expect(afterReplay == 400)
            #expect(refreshed["error"] as? String == "invalid_grant")
            let revoked = try await fixture.outboxPayloads(type: .tokenRevoked)
            // One family-wide revocation covers the refresh token and the access token issued with it.
            #expect(revoked.count == 1)
            let event = try CloudEvent<TokenRevoked>.decode(from: Data(revoked[0].utf8))
            #expect(event.data.reason == .authorizationCodeReplay)
            #expect(event.data.revokedCount == 2)
        }
    }

    @Test func everyPKCERule() async throws {
        try await TokenServiceHarness.run(policy: #"{"pkce": {"allow_plain": false}}"#) { client, fixture in
            let app = try await Self.publicApp(fixture)
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            let other = PKCE.generateVerifier()
            let cases: [(String?, String?, String)] = [
                (verifier, nil, "missing verifier"),
                (verifier, other, "wrong verifier"),
                (verifier, "short", "malformed verifier"),
                (nil, verifier, "verifier without challenge"),
                (nil, nil, "no PKCE for a public client"),
            ]
            for (challengeVerifier, sent, label) in cases {
                let code = try await fixture.insertCode(
                    clientID: app.clientID, userID: user, verifier: challengeVerifier)
                let (status, json) = try await app.redeem(client, fixture, code: code, verifier: sent)
                #expect(status == 400, "\(label)")
                #expect(json["error"] as? String == "invalid_grant", "\(label)")
            }
            let plain = try await fixture.insertCode(
                clientID: app.clientID, userID: user, verifier: verifier, method: "plain")
            let (status, json) = try await app.redeem(client, fixture, code: plain, verifier: verifier)
            #expect(status == 400)
            #expect(json["error"] as? String == "invalid_grant")
        }
    }

    /// Codes and refresh tokens are sealed, opaque to clients: one altered character, or a code sealed under
    /// another key with any contents, is refused like an unknown code and uses nothing up.
    @Test func alteredOrForgedSealedCodesAndRefreshTokensAreRefusedAndUseNothingUp() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await Self.publicApp(fixture)
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            let code = try await fixture.insertCode(clientID: app.clientID, userID: user, verifier: verifier)
            let altered = { (token: String, position: Int) -> String in
                var characters = Array(token)
                characters[position] = characters[position] == "A" ? "B" : "A"
                return String(characters)
            }
            for position in [0, 1, code.count / 2, code.count - 2] {
                let (status, json) = try await app.redeem(
                    client, fixture, code: altered(code, position), verifier: verifier)
                #expect(status == 400 && json["error"] as? String == "invalid_grant", "position \(position)")
            }
            let forger = AuthorizationCodeSealer(
                hasher: try KeyedHasher(configuration: KeyMaterial.generateConfigurationValue()))
            let forged = try #require(
                forger.seal(
                    AuthorizationCodeContents(
                        userID: user, scope: "openid profile", challenge: PKCE.s256Challenge(for: verifier),
                        challengeMethod: "S256", nonce: nil, dpopJKT: nil, authTime: Date(),
                        expiresAt: Date() + 60),
                    tenant: fixture.tenant, clientID: app.clientID, redirectURI: "com.example.app:/cb"))
            #expect(
                try await app.redeem(client, fixture, code: forged, verifier: verifier).1["error"] as? String
                    == "invalid_grant")
            let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            let refreshToken = try #require(json["refresh_token"] as? String)
            for position in [0, refreshToken.count / 2, refreshToken.count - 2] {
                let (status, json) = try await app.refresh(client, fixture, token: altered(refreshToken, position))
                #expect(status == 400 && json["error"] as? String == "invalid_grant", "position \(position)")
            }
            // Neither rotated nor revoked the family.
            #expect(try await app.refresh(client, fixture, token: refreshToken).0 == 200)
        }
    }

    @Test func codeBindingRules() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await Self.publicApp(fixture)
            let otherApp = try await Self.publicApp(fixture, id: "other-app")
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            // Another client, another redirect URI, expired, unknown.
            let code1 = try await fixture.insertCode(clientID: app.clientID, userID: user, verifier: verifier)
            #expect(
                try await otherApp.redeem(client, fixture, code: code1, verifier: verifier).1["error"] as? String
                    == "invalid_grant")
            #expect(
                try await app.redeem(
                    client, fixture, code: code1, verifier: verifier, redirectURI: "com.example.app:/other"
                ).1["error"] as? String == "invalid_grant")
            // Neither failed attempt consumed the code.
            #expect(try await app.redeem(client, fixture, code: code1, verifier: verifier).0 == 200)
            let expired = try await fixture.insertCode(
                clientID: app.clientID, userID: user, verifier: verifier, expiresIn: -1)
            #expect(
                try await app.redeem(client, fixture, code: expired, verifier: verifier).1["error"] as? String
                    == "invalid_grant")
            #expect(
                try await app.redeem(client, fixture, code: "nope", verifier: verifier).1["error"] as? String
                    == "invalid_grant")
            // dpop_jkt from authorize must match; a dpop-bound client must send a proof.
            let bound = try await fixture.insertCode(
                clientID: app.clientID, userID: user, verifier: verifier, dpopJKT: otherApp.dpop.jkt)
            #expect(
                try await app.redeem(client, fixture, code: bound, verifier: verifier).1["error"] as? String
                    == "invalid_dpop_proof")
            let code2 = try await fixture.insertCode(clientID: app.clientID, userID: user, verifier: verifier)
            #expect(
                try await app.redeem(client, fixture, code: code2, verifier: verifier, withProof: false).1["error"]
                    as? String == "invalid_dpop_proof")
            // A code of this tenant is unknown in another tenant.
            let otherTenant = TestEnvironment.uniqueTenant("tok")
            try await TestDatabase.createTenant(otherTenant, in: fixture.database)
            let code3 = try await fixture.insertCode(clientID: app.clientID, userID: user, verifier: verifier)
            let crossing = try await client.execute(
                uri: "/t/\(otherTenant)/token", method: .post, headers: TokenRequest.headers(),
                body: TokenRequest.form([
                    ("grant_type", "authorization_code"), ("code", code3), ("redirect_uri", "com.example.app:/cb"),
                    ("client_id", app.clientID), ("code_verifier", verifier),
                ])
            ) { response in Int(response.status.code) }
            #expect(crossing == 401)
        }
    }

    @Test func dcrScopeOnlyForTheDCRClientWithTheRegistrationAudience() async throws {
        try await TokenServiceHarness.run { client, fixture in
            try await fixture.insertClient(
                "mobile-dcr-client", authMethod: .noAuthentication, grantTypes: [.authorizationCode, .refreshToken],
                scope: "dcr", isStatic: true)
            let dcrApp = try NativeApp(clientID: "mobile-dcr-client")
            let app = try await Self.publicApp(fixture)
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            let code = try await fixture.insertCode(
                clientID: dcrApp.clientID, userID: user, scope: "dcr", verifier: verifier)
            let (status, json) = try await dcrApp.redeem(
                client, fixture, code: code, verifier: verifier, withProof: false)
            #expect(status == 200, "\(json)")
            #expect(json["expires_in"] as? Int == 300)
            #expect(json["refresh_token"] == nil)
            let registration = "\(TokenServiceHarness.gatewayURL)/t/\(fixture.tenant)/register"
            let claims = try await fixture.verifyAccessToken(
                try #require(json["access_token"] as? String), client: client, audience: registration)
            #expect(claims.scope == "dcr")
            #expect(claims.sub == user.uuidString.lowercased())
            let stolen = try await fixture.insertCode(
                clientID: app.clientID, userID: user, scope: "dcr", verifier: verifier)
            #expect(
                try await app.redeem(client, fixture, code: stolen, verifier: verifier).1["error"] as? String
                    == "invalid_scope")
        }
    }
}
