import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import TokenService

@Suite struct PrivateKeyJWTTests {
    struct Assertion: Encodable {
        var iss: String
        var sub: String
        var aud: String
        var exp: Int64
        var jti: String = UUID().uuidString
    }

    func token(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, assertion: String,
        type: String = ClientAssertionVerifier.assertionType
    ) async throws -> (Int, [String: Any]) {
        try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(),
            body: TokenRequest.form([
                ("grant_type", "client_credentials"), ("client_assertion_type", type), ("client_assertion", assertion),
            ])
        ) { response in (Int(response.status.code), TokenRequest.json(response)) }
    }

    @Test func rfc7523AssertionsAuthenticateOnceEach() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let key = try SigningKey.generate(.es256)
            let stranger = try SigningKey.generate(.es256)
            try await fixture.insertClient(
                "jwt-client", authMethod: .privateKeyJWT, scope: "api", jwks: JWKSet(keys: [key.publicJWK(kid: "k1")]))
            let now = Int64(Date().timeIntervalSince1970)
            func sign(_ claims: Assertion, with signer: SigningKey = key, kid: String? = "k1") throws -> String {
                try CompactJWS.sign(claims: claims, using: signer, header: JWSHeaderParameters(typ: "JWT", kid: kid))
            }
            let good = try sign(Assertion(iss: "jwt-client", sub: "jwt-client", aud: fixture.tokenURL, exp: now + 60))
            let (status, json) = try await token(client, fixture, assertion: good)
            #expect(status == 200, "\(json)")
            #expect(json["scope"] as? String == "api")
            // The same jti again is a replay.
            #expect(try await token(client, fixture, assertion: good).0 == 401)
            let refused: [String] = [
                try sign(
                    Assertion(iss: "jwt-client", sub: "jwt-client", aud: fixture.tokenURL, exp: now + 60),
                    with: stranger, kid: nil),
                try sign(
                    Assertion(iss: "jwt-client", sub: "jwt-client", aud: "https://elsewhere.example", exp: now + 60)),
                try sign(Assertion(iss: "jwt-client", sub: "jwt-client", aud: fixture.tokenURL, exp: now - 120)),
                try sign(Assertion(iss: "jwt-client", sub: "jwt-client", aud: fixture.tokenURL, exp: now + 86_400)),
                try sign(Assertion(iss: "other", sub: "jwt-client", aud: fixture.tokenURL, exp: now + 60)),
                "not-a-jwt",
            ]
            for assertion in refused {
                let (status, json) = try await token(client, fixture, assertion: assertion)
                #expect(status == 401)
                #expect(json["error"] as? String == "invalid_client")
            }
            let wrongType = try sign(
                Assertion(iss: "jwt-client", sub: "jwt-client", aud: fixture.tokenURL, exp: now + 60))
            #expect(
                try await token(client, fixture, assertion: wrongType, type: "urn:example:saml").1["error"] as? String
                    == "invalid_request")
        }
    }
}
