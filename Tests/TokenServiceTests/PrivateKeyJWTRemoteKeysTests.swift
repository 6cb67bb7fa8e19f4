import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import Synchronization
import Testing

@testable import TokenService

/// `private_key_jwt` for clients registered with a `jwks_uri`: the token service fetches the document (outbound
/// rules), caches it, and fetches again when an assertion names a `kid` it has not seen.
@Suite struct PrivateKeyJWTRemoteKeysTests {
    /// The client's key server: serves whatever key set the test puts up, and counts the fetches.
    final class KeyServer: Sendable {
        let keys: Mutex<JWKSet>
        let fetches = Mutex(0)

        init(_ keys: JWKSet) { self.keys = Mutex(keys) }

        var router: Router<BasicRequestContext> {
            let router = Router()
            router.get("jwks") { _, _ in
                self.fetches.withLock { $0 += 1 }
                let body = try LatchkeyJSON.encode(self.keys.withLock { $0 })
                return Response(
                    status: .ok, headers: [.contentType: "application/jwk-set+json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
            return router
        }
    }

    @Test func keysAreFetchedCachedAndRefetchedForANewKid() async throws {
        let first = try SigningKey.generate(.es256)
        let second = try SigningKey.generate(.es256)
        let server = KeyServer(JWKSet(keys: [first.publicJWK(kid: "k1")]))
        let clock = FixedWallClock(Date())
        try await withLoopbackServer(server.router) { port in
            try await TokenServiceHarness.run(configure: { $0.clientKeysClock = clock }) { client, fixture in
                try await fixture.insertClient(
                    "remote-keys", authMethod: .privateKeyJWT, scope: "api",
                    jwksURI: "http://127.0.0.1:\(port)/jwks")
                let assertions = PrivateKeyJWTTests()
                func status(_ key: SigningKey, kid: String?) async throws -> Int {
                    let now = Int64(Date().timeIntervalSince1970)
                    let assertion = try CompactJWS.sign(
                        claims: PrivateKeyJWTTests.Assertion(
                            iss: "remote-keys", sub: "remote-keys", aud: fixture.tokenURL, exp: now + 60),
                        using: key, header: JWSHeaderParameters(typ: "JWT", kid: kid))
                    return try await assertions.token(client, fixture, assertion: assertion).0
                }
                #expect(try await status(first, kid: "k1") == 200)
                #expect(try await status(first, kid: "k1") == 200)
                #expect(server.fetches.withLock { $0 } == 1, "the key set was not cached")

                // The client rotates its key. Right after a fetch, an unknown kid does not fetch again…
                server.keys.withLock { $0 = JWKSet(keys: [second.publicJWK(kid: "k2")]) }
                #expect(try await status(second, kid: "k2") == 401)
                #expect(server.fetches.withLock { $0 } == 1)
                // …once the refresh interval has passed, it does, once.
                clock.advance(by: 31)
                #expect(try await status(second, kid: "k2") == 200)
                #expect(try await status(second, kid: "k2") == 200)
                #expect(server.fetches.withLock { $0 } == 2)
                // Made-up kids cost at most one fetch per interval, and authenticate nothing.
                for kid in ["k3", "k4", "k5"] { #expect(try await status(second, kid: kid) == 401) }
                #expect(server.fetches.withLock { $0 } == 2)
                clock.advance(by: 31)
                for kid in ["k6", "k7"] { #expect(try await status(second, kid: kid) == 401) }
                #expect(server.fetches.withLock { $0 } == 3)
                // A key the document never held does not verify, whatever its kid.
                let stranger = try SigningKey.generate(.es256)
                #expect(try await status(stranger, kid: "k2") == 401)
            }
        }
    }

    @Test func aJWKSURIOnAPrivateAddressIsNeverFetched() async throws {
        try await TokenServiceHarness.run { client, fixture in
            // The harness allows loopback http only; an internal address stays refused.
            try await fixture.insertClient(
                "internal-keys", authMethod: .privateKeyJWT, scope: "api", jwksURI: "https://10.1.2.3/jwks")
            let key = try SigningKey.generate(.es256)
            let now = Int64(Date().timeIntervalSince1970)
            let assertion = try CompactJWS.sign(
                claims: PrivateKeyJWTTests.Assertion(
                    iss: "internal-keys", sub: "internal-keys", aud: fixture.tokenURL, exp: now + 60),
                using: key, header: JWSHeaderParameters(typ: "JWT", kid: "k1"))
            let (status, json) = try await PrivateKeyJWTTests().token(client, fixture, assertion: assertion)
            #expect(status == 401)
            #expect(json["error"] as? String == "invalid_client")
        }
    }
}
