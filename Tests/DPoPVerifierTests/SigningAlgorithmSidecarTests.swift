import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import DPoPVerifier

/// The sidecar verifies tokens of issuers signing with ES256, RS256 or EdDSA (JWKS over HTTP), and only
/// with the algorithm each published key declares.
@Suite struct SigningAlgorithmSidecarTests {
    @Test(arguments: TenantPolicy.signingAlgorithms)
    func tokensOfEveryTenantAlgorithmPassAndForgeriesAgainstTheKeyDoNot(algorithm: JWSAlgorithm) async throws {
        try await ProxyHarness.run(issuerAlgorithm: algorithm) { stack in
            #expect(try CompactJWS(parsing: stack.token).header.alg == algorithm.rawValue)
            let accepted = try await stack.send(.GET, "/v1/orders")
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(try accepted.echo().values("x-latchkey-subject") == ["user-1"])

            let key = try #require(stack.issuer.publishedKey())
            let payload = try CompactJWS(parsing: stack.token).payload
            for (name, forged) in try AlgorithmConfusion.forgeries(against: key, payload: payload) {
                let refused = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: forged, signer: stack.signer)
                #expect(refused.status == 401, "\(name): \(refused.text)")
                #expect(refused.header("WWW-Authenticate")?.contains("invalid_token") == true, "\(name)")
            }
        }
    }
}
