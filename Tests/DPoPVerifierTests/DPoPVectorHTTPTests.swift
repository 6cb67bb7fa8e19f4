import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import Testing

@testable import DPoPVerifier

/// Every proof vector of `dpop-proofs.json` (and the JWS edge cases) sent through the sidecar's
/// HTTP path in proxy mode, with a real upstream on loopback, the vector's clock and an external
/// origin taken from the vector's URL. Only the access token's JWT signature check is replaced
/// (see ``VectorTokenValidator``); a valid vector must reach the upstream with its `jkt`, an
/// invalid one must get 401 with the RFC 9449 §7.1 challenge and never reach the upstream.
@Suite struct DPoPVectorHTTPTests {
    static let algs = #"algs="ES256 ES384 PS256 RS256 EdDSA""#

    func settings(upstreamPort: Int, origin: String, vector: SharedVectors.DPoPVector, file: SharedVectors.DPoPFile)
        throws
        -> (SidecarSettings, SidecarOverrides)
    {
        var settings = SidecarSettings(
            upstream: try UpstreamSettings(url: "http://127.0.0.1:\(upstreamPort)"),
            origins: try ExternalOrigins([origin]),
            issuers: ["https://as.example.com/t/acme"], audiences: ["https://api.example.com"])
        settings.iatWindowSeconds = vector.iatWindowSeconds
        var overrides = SidecarOverrides()
        overrides.clock = FixedWallClock(unixSeconds: vector.now)
        overrides.tokenValidator = VectorTokenValidator(
            token: vector.accessToken ?? "no-token", jkt: vector.expectedJKT)
        if let nonce = vector.requiredNonce {
            settings.nonceMode = .required(secret: SymmetricKey(size: .bits256), stepSeconds: 300)
            overrides.nonceSource = ExactNonceSource(value: nonce)
        }
        return (settings, overrides)
    }

    func headers(_ vector: SharedVectors.DPoPVector) -> HTTPFields {
        var headers: HTTPFields = [.dpop: vector.proof]
        if let token = vector.accessToken { headers[.authorization] = "DPoP \(token)" }
        return headers
    }

    func run(_ fileName: String, expectedCount: Int) async throws {
        let file = try SharedVectors.load(fileName, as: SharedVectors.DPoPFile.self)
        #expect(file.vectors.count == expectedCount)
        try await withLoopbackServer(TestUpstream.router()) { upstreamPort in
            for vector in file.vectors {
                let (origin, target) = try DPoPVectors.split(vector.request.url)
                let (settings, overrides) = try settings(
                    upstreamPort: upstreamPort, origin: origin, vector: vector, file: file)
                try await withRequestPath(settings, overrides: overrides) { client in
                    let method = HTTPRequest.Method(vector.request.method)!
                    let response = try await client.execute(uri: target, method: method, headers: headers(vector))
                    try check(vector, response, client: client, method: method, target: target)
                }
            }
        }
    }

    func check(
        _ vector: SharedVectors.DPoPVector, _ response: TestResponse, client: any TestClientProtocol,
        method: HTTPRequest.Method, target: String
    ) throws {
        let challenge = response.headers[.wwwAuthenticate] ?? ""
        switch (vector.expected, vector.accessToken) {
        case ("valid", .some):
            #expect(response.status == .ok, "\(vector.name): \(response.status) \(challenge)")
            let echo = try JSONDecoder().decode(EchoedRequest.self, from: Data(buffer: response.body))
            #expect(echo.value("x-latchkey-jkt") == vector.expectedJKT, "\(vector.name)")
            #expect(echo.target == target, "\(vector.name)")
            #expect(
                echo.value("dpop") == nil && echo.value("authorization") == nil, "\(vector.name): credentials forwarded"
            )
        case ("valid", nil):
            // token-endpoint-no-ath: valid at a token endpoint, where no access token exists. The
            // sidecar guards resources and always needs one, so the same request is a bare
            // challenge (RFC 6750 §3.1: no error code for a request without credentials).
            #expect(response.status == .unauthorized, "\(vector.name)")
            #expect(challenge == "DPoP \(Self.algs)", "\(vector.name): \(challenge)")
            #expect(response.headers[HTTPField.Name("X-Upstream")!] == nil)
        case ("invalid", _):
            #expect(response.status == .unauthorized, "\(vector.name): \(response.status)")
            #expect(response.headers[HTTPField.Name("X-Upstream")!] == nil, "\(vector.name) reached the upstream")
            if vector.requiredNonce != nil && vector.name.hasPrefix("nonce-") {
                #expect(challenge.hasPrefix(#"DPoP error="use_dpop_nonce""#), "\(vector.name): \(challenge)")
                #expect(response.headers[HTTPField.Name("DPoP-Nonce")!] == vector.requiredNonce, "\(vector.name)")
            } else {
                #expect(challenge.hasPrefix(#"DPoP error="invalid_dpop_proof""#), "\(vector.name): \(challenge)")
                #expect(challenge.hasSuffix(Self.algs), "\(vector.name): \(challenge)")
            }
        default:
            Issue.record("\(vector.name): unknown verdict \(vector.expected)")
        }
    }

    @Test func dpopProofVectorsThroughTheProxy() async throws {
        try await run("dpop-proofs.json", expectedCount: 33)
    }

    @Test func jwsEdgeCaseVectorsThroughTheProxy() async throws {
        try await run("jws-edge-cases.json", expectedCount: 18)
    }

    /// The token-endpoint vector's proof carries no `ath`; presented with an access token at a
    /// resource it is refused (RFC 9449 §7.1: `ath` is required there).
    @Test func tokenEndpointProofIsRefusedAtAResource() async throws {
        let file = try SharedVectors.load("dpop-proofs.json", as: SharedVectors.DPoPFile.self)
        let vector = try #require(file.vectors.first { $0.name == "token-endpoint-no-ath" })
        let (origin, target) = try DPoPVectors.split(vector.request.url)
        try await withLoopbackServer(TestUpstream.router()) { upstreamPort in
            var (settings, overrides) = try settings(
                upstreamPort: upstreamPort, origin: origin, vector: vector, file: file)
            overrides.tokenValidator = VectorTokenValidator(
                token: "opaque-token", jkt: "_6D1n4dJxwIoauO9oiP-WVr3m1V_pga3QrOEL5gDtno")
            try await withRequestPath(settings, overrides: overrides) { client in
                let response = try await client.execute(
                    uri: target, method: .post, headers: [.authorization: "DPoP opaque-token", .dpop: vector.proof])
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate]?.contains("ath is required") == true)
            }
        }
    }

    @Test func replayedProofIsRefusedTheSecondTime() async throws {
        let file = try SharedVectors.load("dpop-proofs.json", as: SharedVectors.DPoPFile.self)
        let replay = try #require(file.replay)
        let vector = SharedVectors.DPoPVector(
            name: "replay", proof: replay.proof, request: replay.request, accessToken: replay.accessToken,
            expectedJKT: replay.expectedJKT, requiredNonce: nil, now: file.clockNow,
            iatWindowSeconds: file.iatWindowSeconds,
            expected: "valid")
        let (origin, target) = try DPoPVectors.split(vector.request.url)
        try await withLoopbackServer(TestUpstream.router()) { upstreamPort in
            let (settings, overrides) = try settings(
                upstreamPort: upstreamPort, origin: origin, vector: vector, file: file)
            try await withRequestPath(settings, overrides: overrides) { client in
                let first = try await client.execute(uri: target, method: .get, headers: headers(vector))
                #expect(first.status == .ok)
                let second = try await client.execute(uri: target, method: .get, headers: headers(vector))
                #expect(second.status == .unauthorized)
                #expect(
                    second.headers[.wwwAuthenticate]?.hasPrefix(
                        #"DPoP error="invalid_dpop_proof", error_description="jti has already been used""#) == true)
                #expect(second.headers[HTTPField.Name("X-Upstream")!] == nil)
            }
        }
    }
}
