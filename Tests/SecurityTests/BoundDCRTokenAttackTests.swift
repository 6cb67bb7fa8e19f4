import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import LatchkeyCLI

/// A DPoP-bound DCR token registers only with the DPoP scheme and a proof of its key.
@Suite struct BoundDCRTokenAttackTests {
    @Test func boundDCRTokenPresentedAsBearerIsRefused() async throws {
        try await SeededPlatform.run { platform in
            let dcrClient = platform.credentials.dcrClientID
            let redirect = DemoSeeder.dcrRedirectURI
            let key = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let code = try await platform.authorize(clientID: dcrClient, redirectURI: redirect, scope: "dcr")
            let tokenEndpoint = platform.endpoints.tokenEndpoint
            var exchange = try await platform.redeem(
                code, clientID: dcrClient, redirectURI: redirect,
                headers: [("DPoP", try key.proof(method: "POST", url: tokenEndpoint))])
            if exchange.json["error"] as? String == "use_dpop_nonce" {
                exchange = try await platform.redeem(
                    code, clientID: dcrClient, redirectURI: redirect,
                    headers: [
                        (
                            "DPoP",
                            try key.proof(
                                method: "POST", url: tokenEndpoint, nonce: exchange.headers.first(name: "DPoP-Nonce"))
                        )
                    ])
            }
            try expect(exchange, 200, "a DPoP-bound DCR token")
            #expect(exchange.json["token_type"] as? String == "DPoP")
            let token = exchange.json["access_token"] as? String ?? ""
            let register = "\(platform.endpoints.gateway)/t/demo/register"
            let body =
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#

            let asBearer = try await platform.http.postJSON(register, body, headers: platform.bearer(token))
            #expect(
                asBearer.status == 401, "bound DCR token as Bearer: \(asBearer.status) \(asBearer.body.prefix(200))")
            let withoutProof = try await platform.http.postJSON(
                register, body, headers: [("Authorization", "DPoP \(token)")])
            #expect(withoutProof.status == 401)
            let otherKey = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let wrongKey = try await platform.http.postJSON(
                register, body,
                headers: [
                    ("Authorization", "DPoP \(token)"),
                    ("DPoP", try otherKey.proof(method: "POST", url: register, accessToken: token)),
                ])
            #expect(wrongKey.status == 401)
            let wrongURL = try await platform.http.postJSON(
                register, body,
                headers: [
                    ("Authorization", "DPoP \(token)"),
                    (
                        "DPoP",
                        try key.proof(method: "POST", url: "https://evil.example/t/demo/register", accessToken: token)
                    ),
                ])
            #expect(wrongURL.status == 401)

            let proof = try key.proof(method: "POST", url: register, accessToken: token)
            let bound = try await platform.http.postJSON(
                register, body, headers: [("Authorization", "DPoP \(token)"), ("DPoP", proof)])
            #expect(bound.status == 201, "bound DCR token with its proof: \(bound.status) \(bound.body.prefix(200))")
            let replayed = try await platform.http.postJSON(
                register, body, headers: [("Authorization", "DPoP \(token)"), ("DPoP", proof)])
            #expect(replayed.status == 401, "a replayed proof registered again")
        }
    }
}
