import AsyncHTTPClient
import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyTestSupport
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix

@testable import DPoPVerifier

/// An issuer + upstream on one loopback server and a live sidecar in front of it, with a client
/// key and a token bound to it.
struct ProxyHarness: Sendable {
    let sidecar: LiveSidecar
    let issuer: TestIssuer
    let upstreamPort: Int
    let signer: DPoPProofSigner
    let token: String

    var issuerURL: String { issuer.issuer(port: upstreamPort) }

    /// A fresh-proof DPoP request with the stack's token.
    func send(
        _ method: HTTPMethod = .GET, _ target: String, headers: [(String, String)] = [],
        body: HTTPClientRequest.Body? = nil, origin: String = SidecarFixtures.origin, timeout: TimeAmount = .seconds(20)
    ) async throws -> Reply {
        try await sidecar.sendDPoP(
            method, target, token: token, signer: signer, origin: origin, headers: headers, body: body,
            timeout: timeout)
    }

    /// Runs `body` against a fresh stack (its issuer signing with `issuerAlgorithm`); `configure` adjusts
    /// the sidecar's settings first.
    static func run<T: Sendable>(
        mode: SidecarSettings.Mode = .proxy, cluster: EmbeddedKafkaCluster? = nil,
        issuerAlgorithm: JWSAlgorithm = .es256,
        configure: @Sendable (inout SidecarSettings, _ upstreamPort: Int) throws -> Void = { _, _ in },
        overrides: SidecarOverrides = SidecarOverrides(),
        _ body: @Sendable (ProxyHarness) async throws -> T
    ) async throws -> T {
        let issuer = try TestIssuer(algorithm: issuerAlgorithm)
        return try await withLoopbackServer(TestUpstream.router(issuer: issuer)) { port in
            var settings = try SidecarFixtures.settings(
                upstreamPort: port, issuer: issuer.issuer(port: port), mode: mode)
            try configure(&settings, port)
            let frozen = settings
            return try await withLiveSidecar(frozen, overrides: overrides, cluster: cluster) { sidecar in
                let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
                let stack = ProxyHarness(
                    sidecar: sidecar, issuer: issuer, upstreamPort: port, signer: signer,
                    token: try issuer.token(port: port, boundTo: signer))
                return try await body(stack)
            }
        }
    }
}
