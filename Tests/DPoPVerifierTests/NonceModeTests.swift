import AsyncHTTPClient
import Crypto
import Foundation
import LatchkeyCore
import LatchkeyKafka
import NIOCore
import NIOHTTP1
import Testing

@testable import DPoPVerifier

/// `DPOP_NONCE_MODE=required`: stateless HMAC nonces shared by replicas (RFC 9449 §9).
@Suite struct NonceModeTests {
    static let secret = SymmetricKey(size: .bits256)

    func run(
        clock: FixedWallClock, cluster: EmbeddedKafkaCluster? = nil,
        _ body: @Sendable (ProxyHarness) async throws -> Void
    ) async throws {
        var overrides = SidecarOverrides()
        overrides.clock = clock
        try await ProxyHarness.run(
            cluster: cluster,
            configure: { settings, _ in
                settings.nonceMode = .required(secret: Self.secret, stepSeconds: 300)
            }, overrides: overrides, body)
    }

    func token(_ stack: ProxyHarness, signer: DPoPProofSigner, clock: FixedWallClock) throws -> String {
        try stack.issuer.sign(
            stack.issuer.claims(
                port: stack.upstreamPort, jkt: signer.jkt,
                now: Int64(clock.now().timeIntervalSince1970), lifetime: 3_600))
    }

    @Test func firstRequestGetsANonceTheRetrySucceedsAndOldStepsAreRefused() async throws {
        let clock = FixedWallClock(Date())
        try await run(clock: clock) { stack in
            let signer = DPoPProofSigner(key: stack.signer.key, clock: clock)
            let token = try token(stack, signer: signer, clock: clock)

            let first = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: signer)
            #expect(first.status == 401)
            #expect(first.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
            let nonce = try #require(first.header("DPoP-Nonce"))

            let retry = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: signer, nonce: nonce)
            #expect(retry.status == 200, "\(retry.text)")
            #expect(retry.header("DPoP-Nonce") != nil, "every 2xx carries a fresh nonce")

            let forged = try await stack.sidecar.sendDPoP(
                .GET, "/v1/orders", token: token, signer: signer, nonce: "n-123")
            #expect(forged.status == 401)
            #expect(forged.header("DPoP-Nonce") != nil)

            // One step later the nonce still works; two steps later it is stale.
            clock.advance(by: 300)
            #expect(
                try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: signer, nonce: nonce).status
                    == 200)
            clock.advance(by: 300)
            let stale = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: signer, nonce: nonce)
            #expect(stale.status == 401)
            #expect(stale.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
            let fresh = try #require(stale.header("DPoP-Nonce"))
            #expect(fresh != nonce)
            #expect(
                try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: signer, nonce: fresh).status
                    == 200)
        }
    }

    @Test func replicasSharingTheSecretAcceptEachOthersNonces() async throws {
        let clock = FixedWallClock(Date())
        let cluster = try SidecarFixtures.makeCluster()
        defer { cluster.shutdown() }
        try await run(clock: clock, cluster: cluster) { first in
            let signer = DPoPProofSigner(key: first.signer.key, clock: clock)
            let challenge = try await first.sidecar.sendDPoP(
                .GET, "/v1/orders", token: try token(first, signer: signer, clock: clock),
                signer: signer)
            let nonce = try #require(challenge.header("DPoP-Nonce"))
            try await run(clock: clock, cluster: cluster) { second in
                let token = try token(second, signer: signer, clock: clock)
                let reply = try await second.sidecar.sendDPoP(
                    .GET, "/v1/orders", token: token, signer: signer, nonce: nonce)
                #expect(reply.status == 200, "\(reply.text)")
            }
        }
    }
}
