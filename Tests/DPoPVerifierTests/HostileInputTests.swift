import AsyncHTTPClient
import Crypto
import Foundation
import LatchkeyCore
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import DPoPVerifier

/// Oversized, duplicated, malformed and hostile input: always a quick 4xx, never a 500 or a crash.
@Suite struct HostileInputTests {
    static func b64(_ text: String) -> String { Base64URL.encode(Data(text.utf8)) }

    static func claims(_ stack: ProxyHarness, target: String = "/v1/orders") -> String {
        let ath = Base64URL.encode(SHA256Digest.of(stack.token))
        return
            #"{"jti":"\#(UUID().uuidString)","htm":"GET","htu":"\#(SidecarFixtures.origin + target)","iat":\#(Int64(Date().timeIntervalSince1970)),"ath":"\#(ath)"}"#
    }

    /// Signs a hand-built header and payload with `key`.
    static func signRaw(header: String, payload: String, key: SigningKey) throws -> String {
        let input = b64(header) + "." + b64(payload)
        return input + "." + Base64URL.encode(try key.sign(Data(input.utf8)))
    }

    /// Sends `proof` as the DPoP header with the stack's token; returns the reply and how long it took.
    func attempt(_ stack: ProxyHarness, proof: String, extra: [(String, String)] = []) async throws -> (Reply, Duration)
    {
        let start = ContinuousClock.now
        let reply = try await stack.sidecar.send(
            .GET, "/v1/orders", headers: [("Authorization", "DPoP \(stack.token)"), ("DPoP", proof)] + extra)
        return (reply, ContinuousClock.now - start)
    }

    func expectQuickRefusal(_ outcome: (Reply, Duration), status: Int = 401, containing text: String, _ label: String) {
        // Speed is the benchmark's business (timed assertions flake on a loaded machine); this checks the verdict.
        let (reply, _) = outcome
        #expect(reply.status == status, "\(label): \(reply.status) \(reply.text)")
        #expect(reply.header("X-Upstream") == nil, "\(label) reached the upstream")
        #expect(
            reply.header("WWW-Authenticate")?.contains(text) == true || reply.text.contains(text),
            "\(label): \(reply.header("WWW-Authenticate") ?? reply.text)")
    }

    @Test func oversizedDuplicatedAndMalformedProofsAreRefusedQuickly() async throws {
        try await ProxyHarness.run { stack in
            let key = stack.signer.key
            let jwk = try String(decoding: JSONEncoder().encode(key.bareJWK), as: UTF8.self)
            let header = #"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(jwk)}"#

            let huge = String(repeating: "a", count: 100 * 1024)
            let (hugeReply, _) = try await attempt(stack, proof: huge)
            #expect([400, 401, 431].contains(hugeReply.status), "100 KiB DPoP header: \(hugeReply.status)")

            let valid = try stack.signer.proof(
                method: "GET", url: SidecarFixtures.origin + "/v1/orders", accessToken: stack.token)
            expectQuickRefusal(
                try await attempt(stack, proof: valid, extra: [("DPoP", valid)]),
                containing: "more than one DPoP header", "two DPoP headers")

            let payload = Self.claims(stack)
            let notJSONHeader =
                Self.b64("not json at all") + "." + Self.b64(payload) + "." + Base64URL.encode(Data(count: 64))
            expectQuickRefusal(
                try await attempt(stack, proof: notJSONHeader), containing: "not a JSON object", "non-JSON header")
            let notJSONPayload = try Self.signRaw(header: header, payload: "[1,2,3", key: key)
            expectQuickRefusal(
                try await attempt(stack, proof: notJSONPayload), containing: "invalid_dpop_proof", "non-JSON payload")
            let binary = "\u{1}\u{2}" + String(repeating: "\u{7f}", count: 30)
            expectQuickRefusal(
                try await attempt(stack, proof: Self.b64(binary) + ".."), containing: "invalid_dpop_proof",
                "binary segment")

            let hugeX = Base64URL.encode(Data(count: 4_000))
            let hugeJWK =
                #"{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"\#(hugeX)","y":"\#(hugeX)"}}"#
            expectQuickRefusal(
                try await attempt(stack, proof: try Self.signRaw(header: hugeJWK, payload: payload, key: key)),
                containing: "exceeds 8192 bytes", "huge JWK")
            let bigX = Base64URL.encode(Data(count: 2_000))
            let bigJWK =
                #"{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"\#(bigX)","y":"\#(bigX)"}}"#
            expectQuickRefusal(
                try await attempt(stack, proof: try Self.signRaw(header: bigJWK, payload: payload, key: key)),
                containing: "exactly 32 bytes", "oversized EC coordinates")
        }
    }

    @Test func sixteenThousandBitRSAKeyIsRefusedByTheSizeBoundBeforeAnyRSAWork() async throws {
        try await ProxyHarness.run { stack in
            var modulus = (0..<2_048).map { _ in UInt8.random(in: 0...255) }
            modulus[0] |= 0x80
            let header =
                #"{"typ":"dpop+jwt","alg":"RS256","jwk":{"kty":"RSA","n":"\#(Base64URL.encode(modulus))","e":"AQAB"}}"#
            let proof =
                Self.b64(header) + "." + Self.b64(Self.claims(stack)) + "."
                + Base64URL.encode((0..<2_048).map { _ in UInt8.random(in: 0...255) })
            #expect(proof.utf8.count < 8_192)
            let outcome = try await attempt(stack, proof: proof)
            expectQuickRefusal(outcome, containing: "16384 bits is above 8192", "RSA-16384")
        }
    }

    @Test func deeplyNestedJSONIsRefusedWithoutCrashing() async throws {
        try await ProxyHarness.run { stack in
            let depth = 3_000
            let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let header = #"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(nested)}"#
            let proof = try Self.signRaw(header: header, payload: Self.claims(stack), key: stack.signer.key)
            expectQuickRefusal(
                try await attempt(stack, proof: proof), containing: "invalid_dpop_proof", "nested proof header")

            let nestedPayload = #"{"iss":\#(nested)}"#
            let token =
                Self.b64(#"{"typ":"at+jwt","alg":"ES256","kid":"k1"}"#) + "." + Self.b64(nestedPayload) + "."
                + Base64URL.encode(Data(count: 64))
            let reply = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: stack.signer)
            #expect(reply.status == 401)
            #expect(reply.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="invalid_token""#) == true)
        }
    }

    @Test func oversizedTokensAndHeaderInjectionAttempts() async throws {
        try await ProxyHarness.run { stack in
            let bigToken = String(repeating: "a", count: 20 * 1024)
            let big = try await stack.sidecar.send(.GET, "/v1/orders", headers: [("Authorization", "DPoP \(bigToken)")])
            #expect(big.status == 400)
            #expect(big.header("WWW-Authenticate")?.contains("exceeds 8192 bytes") == true)

            // An attacker-chosen alg echoes into the error description: it must stay one clean header value.
            let header = #"{"typ":"dpop+jwt","alg":"ES256\"\r\nX-Evil: 1","jwk":{"kty":"EC"}}"#
            let proof = try Self.signRaw(header: header, payload: Self.claims(stack), key: stack.signer.key)
            let (reply, _) = try await attempt(stack, proof: proof)
            #expect(reply.status == 401)
            #expect(reply.header("X-Evil") == nil)
            let challenge = reply.header("WWW-Authenticate") ?? ""
            #expect(!challenge.contains("\r") && !challenge.contains("\n"))
            #expect(
                challenge.hasPrefix(#"DPoP error="invalid_dpop_proof", error_description="unsupported alg ES256  "#),
                "\(challenge)")
        }
    }

    /// HTTP/1.0 without keep-alive, and `Connection: close`: one answer, marked, then the connection closes.
    @Test func nonPersistentConnectionsAreAnsweredOnceAndClosed() async throws {
        try await ProxyHarness.run { stack in
            for (version, extra) in [("HTTP/1.0", ""), ("HTTP/1.1", "Connection: close\r\n")] {
                let proof = try stack.signer.proof(
                    method: "GET", url: SidecarFixtures.origin + "/v1/orders", accessToken: stack.token)
                let answer = try await rawHTTP(
                    port: stack.sidecar.port,
                    """
                    GET /v1/orders \(version)\r\nHost: x\r\nAuthorization: DPoP \(stack.token)\r\nDPoP: \(proof)\r\n\(extra)\r\n
                    """, untilClosed: true)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(version): \(answer.prefix(200))")
                #expect(answer.lowercased().contains("\r\nconnection: close\r\n"), "\(version)")
                #expect(answer.components(separatedBy: "HTTP/1.1 ").count == 2, "exactly one answer")
            }
        }
    }

    @Test func absoluteFormTargetsCannotChooseTheOriginAndOddBytesAreRefused() async throws {
        try await ProxyHarness.run { stack in
            // Absolute form names another authority; htu is still computed from the configured origin.
            let evilProof = try stack.signer.proof(
                method: "GET", url: "http://evil.example.com/v1/orders", accessToken: stack.token)
            let absolute = try await rawHTTP(
                port: stack.sidecar.port,
                """
                GET http://evil.example.com/v1/orders HTTP/1.1\r\nHost: evil.example.com\r\nAuthorization: DPoP \(stack.token)\r\n\
                DPoP: \(evilProof)\r\nConnection: close\r\n\r\n
                """)
            #expect(absolute.hasPrefix("HTTP/1.1 401"), "\(absolute)")
            #expect(absolute.contains("htu does not match"))
            let odd = try await rawHTTP(
                port: stack.sidecar.port, "GET /v1/<script> HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(odd.hasPrefix("HTTP/1.1 400"), "\(odd)")
        }
    }
}

extension HostileInputTests {
    /// Every path is the API's in proxy mode (the sidecar's own endpoints are on the management port), so
    /// `/healthz` here is verified like the rest.
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await ProxyHarness.run { stack in
            let proof = try stack.signer.proof(
                method: "GET", url: SidecarFixtures.origin + "/v1/orders", accessToken: stack.token)
            let answer = try await rawHTTP(
                port: stack.sidecar.port,
                """
                GET /v1/orders HTTP/1.1\r\nHost: api.example.com\r\n\r\n\
                GET /healthz HTTP/1.1\r\nHost: api.example.com\r\n\r\n\
                GET /v1/orders HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: DPoP \(stack.token)\r\nDPoP: \(proof)\r\n\r\n\
                GET /v1/orders HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n
                """, untilClosed: true)
            // Bodies end without a line break, so the next status line can follow on the same line.
            let statuses = answer.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
            #expect(statuses == ["401", "401", "200", "401"], "\(answer)")
            #expect(answer.contains(#""method":"GET""#))
        }
    }
}

extension HostileInputTests {
    /// `Expect: 100-continue` (curl sends it for bodies over 1 MiB): an allowed request gets `100 Continue`
    /// from the sidecar before the body is sent; a refused one gets its final 401 at once.
    @Test func expectContinueIsAnsweredOnlyForAllowedRequests() async throws {
        try await ProxyHarness.run { stack in
            let body = String(repeating: "x", count: 5000)
            let proof = try stack.signer.proof(
                method: "POST", url: SidecarFixtures.origin + "/v1/upload", accessToken: stack.token)
            let head = """
                POST /v1/upload HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: DPoP \(stack.token)\r\nDPoP: \(proof)\r\n\
                Content-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n
                """
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: stack.sidecar.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            let answer = try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: head))
                var received = ""
                var iterator = inbound.makeAsyncIterator()
                while !received.contains("\r\n\r\n"), let chunk = try await iterator.next() {
                    received += String(buffer: chunk)
                }
                #expect(received.hasPrefix("HTTP/1.1 100 Continue\r\n"), "\(received)")
                try await outbound.write(ByteBuffer(string: body))
                while let chunk = try await iterator.next() { received += String(buffer: chunk) }
                return received
            }
            #expect(answer.contains("HTTP/1.1 200 OK"), "\(answer)")
            #expect(answer.contains(#""bodyBytes":5000"#), "\(answer)")

            let refused = try await rawHTTP(
                port: stack.sidecar.port,
                """
                POST /v1/upload HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\
                Connection: close\r\n\r\n
                """)
            #expect(refused.hasPrefix("HTTP/1.1 401"), "\(refused)")
        }
    }
}

/// SHA-256 of a string's UTF-8 bytes.
enum SHA256Digest {
    static func of(_ text: String) -> [UInt8] {
        Array(Crypto.SHA256.hash(data: Data(text.utf8)))
    }
}
