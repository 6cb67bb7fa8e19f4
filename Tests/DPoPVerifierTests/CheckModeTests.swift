import AsyncHTTPClient
import LatchkeyCore
import NIOCore
import NIOHTTP1
import Testing

@testable import DPoPVerifier

/// Check mode (`/check` for nginx `auth_request` / ext_authz gateways).
@Suite struct CheckModeTests {
    func checkHeaders(_ stack: ProxyHarness, method: String, uri: String, proofFor url: String) throws -> [(
        String, String
    )] {
        let proof = try stack.signer.proof(method: method, url: url, accessToken: stack.token)
        return [
            ("X-Forwarded-Method", method), ("X-Forwarded-Uri", uri), ("Authorization", "DPoP \(stack.token)"),
            ("DPoP", proof),
        ]
    }

    @Test func trustedGatewayHeadersNameTheOriginalRequest() async throws {
        try await ProxyHarness.run(
            mode: .check,
            configure: { settings, _ in
                settings.trustedProxies = try TrustedProxies(["127.0.0.1", "::1"])
            }
        ) { stack in
            let origin = SidecarFixtures.origin
            for checkMethod: HTTPMethod in [.GET, .POST] {
                let ok = try await stack.sidecar.send(
                    checkMethod, "/check",
                    headers: try checkHeaders(
                        stack, method: "DELETE", uri: "/v1/orders/7?force=1",
                        proofFor: origin + "/v1/orders/7"))
                #expect(ok.status == 200, "\(ok.text)")
                #expect(ok.header("X-Latchkey-Tenant") == "acme")
                #expect(ok.header("X-Latchkey-Client-Id") == "client-1")
                #expect(ok.header("X-Latchkey-Jkt") == stack.signer.jkt)
                #expect(ok.header("Cache-Control") == "no-store")
            }
            // The proof was for DELETE; the gateway says the original was GET.
            let wrongMethod = try await stack.sidecar.send(
                .GET, "/check",
                headers: try checkHeaders(
                    stack, method: "DELETE", uri: "/v1/orders/7", proofFor: origin + "/v1/orders/7"
                )
                .map { $0.0 == "X-Forwarded-Method" ? ($0.0, "GET") : $0 })
            #expect(wrongMethod.status == 401)
            #expect(wrongMethod.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="invalid_dpop_proof""#) == true)

            let missing = try await stack.sidecar.send(.GET, "/check", headers: [("X-Forwarded-Uri", "/v1/orders")])
            #expect(missing.status == 401)
            #expect(missing.headers("WWW-Authenticate") == [#"DPoP algs="ES256 ES384 PS256 RS256 EdDSA""#])

            let absolute = try await stack.sidecar.send(
                .GET, "/check", headers: [("X-Forwarded-Uri", "http://evil.example.com/x")])
            #expect(absolute.status == 400)
            let badMethod = try await stack.sidecar.send(.GET, "/check", headers: [("X-Forwarded-Method", "GET /x")])
            #expect(badMethod.status == 400)

            // Nothing but /check (and the health routes) exists in check mode.
            #expect(try await stack.sidecar.send(.GET, "/v1/orders").status == 404)
        }
    }

    @Test func untrustedCallersAreCheckedAgainstTheirOwnRequest() async throws {
        try await ProxyHarness.run(mode: .check) { stack in
            let origin = SidecarFixtures.origin
            let spoofed = try await stack.sidecar.send(
                .GET, "/check",
                headers: try checkHeaders(
                    stack, method: "DELETE", uri: "/v1/orders/7", proofFor: origin + "/v1/orders/7"))
            #expect(spoofed.status == 401)
            #expect(spoofed.header("WWW-Authenticate")?.contains("does not match") == true)
            #expect(spoofed.header("X-Latchkey-Client-Id") == nil)

            let own = try await stack.sidecar.sendDPoP(.GET, "/check", token: stack.token, signer: stack.signer)
            #expect(own.status == 200)
            #expect(own.header("X-Latchkey-Subject") == "user-1")
        }
    }
}
