import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

@Suite struct TokenEndpointDPoPTests {
    func request(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, secret: String, proof: String?,
        extraProof: String? = nil
    ) async throws -> (Int, [String: Any], String?) {
        var headers = TokenRequest.headers(basic: ("svc", secret), dpop: proof)
        if let extraProof { headers.append(HTTPField(name: HTTPField.Name("DPoP")!, value: extraProof)) }
        return try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: headers,
            body: TokenRequest.form([("grant_type", "client_credentials")])
        ) { response in
            (Int(response.status.code), TokenRequest.json(response), response.headers[HTTPField.Name("DPoP-Nonce")!])
        }
    }

    @Test func proofChecksAtTheTokenEndpoint() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api", dpopBound: true))
            let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let good = try signer.proof(method: "POST", url: fixture.tokenURL)
            let (status, json, _) = try await request(client, fixture, secret: secret, proof: good)
            #expect(status == 200)
            #expect(json["token_type"] as? String == "DPoP")
            let claims = try await fixture.verifyAccessToken(
                try #require(json["access_token"] as? String), client: client)
            #expect(claims.cnf?.jkt == signer.jkt)
            let bad: [(String?, String?, String)] = [
                (good, nil, "replayed proof"),
                (try signer.proof(method: "GET", url: fixture.tokenURL), nil, "wrong method"),
                (try signer.proof(method: "POST", url: "\(fixture.issuer)/revoke"), nil, "wrong URL"),
                (
                    try signer.proof(
                        method: "POST", url: fixture.tokenURL, iat: Int64(Date().timeIntervalSince1970) - 600), nil,
                    "stale iat"
                ),
                ("not.a.jws", nil, "malformed"),
                (
                    try signer.proof(method: "POST", url: fixture.tokenURL),
                    try signer.proof(method: "POST", url: fixture.tokenURL), "two proofs"
                ),
                (nil, nil, "missing proof for a dpop-bound client"),
            ]
            for (proof, extra, label) in bad {
                let (status, json, _) = try await request(
                    client, fixture, secret: secret, proof: proof, extraProof: extra)
                #expect(status == 400, "\(label)")
                #expect(json["error"] as? String == "invalid_dpop_proof", "\(label)")
            }
        }
    }

    @Test func tenantNoncesAreDemandedAndHandedOut() async throws {
        try await TokenServiceHarness.run(policy: #"{"dpop": {"nonce_required": true}}"#) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let (status, json, nonce) = try await request(
                client, fixture, secret: secret, proof: try signer.proof(method: "POST", url: fixture.tokenURL))
            #expect(status == 400)
            #expect(json["error"] as? String == "use_dpop_nonce")
            let serverNonce = try #require(nonce)
            let (retry, retryJSON, freshNonce) = try await request(
                client, fixture, secret: secret,
                proof: try signer.proof(method: "POST", url: fixture.tokenURL, nonce: serverNonce))
            #expect(retry == 200, "\(retryJSON)")
            #expect(freshNonce != nil)
            let (wrong, wrongJSON, _) = try await request(
                client, fixture, secret: secret,
                proof: try signer.proof(method: "POST", url: fixture.tokenURL, nonce: "forged"))
            #expect(wrong == 400)
            #expect(wrongJSON["error"] as? String == "use_dpop_nonce")
        }
    }

    @Test func tenantPolicyCanRequireDPoPForEveryClient() async throws {
        try await TokenServiceHarness.run(policy: #"{"dpop": {"required": true}}"#) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            let (status, json, _) = try await request(client, fixture, secret: secret, proof: nil)
            #expect(status == 400)
            #expect(json["error"] as? String == "invalid_dpop_proof")
        }
    }
}
