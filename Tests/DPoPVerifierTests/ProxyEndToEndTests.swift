import AsyncHTTPClient
import Crypto
import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization
import Testing

@testable import DPoPVerifier

/// Proxy mode end to end: real tokens from a loopback issuer (discovery + JWKS over HTTP), fresh
/// DPoP proofs, a real upstream, the full application (PostgreSQL, embedded Kafka).
@Suite struct ProxyEndToEndTests {
    @Test func getWithQueryReachesTheUpstreamWithIdentityAndWithoutCredentials() async throws {
        try await ProxyHarness.run { stack in
            let reply = try await stack.send(.GET, "/v1/orders?page=2&q=a%20b")
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.header("DPoP-Nonce") == nil)
            let echo = try reply.echo()
            #expect(echo.method == "GET")
            #expect(echo.target == "/v1/orders?page=2&q=a%20b")
            #expect(echo.values("x-latchkey-tenant") == ["acme"])
            #expect(echo.values("x-latchkey-client-id") == ["client-1"])
            #expect(echo.values("x-latchkey-subject") == ["user-1"])
            #expect(echo.values("x-latchkey-scope") == ["orders:read"])
            #expect(echo.values("x-latchkey-jkt") == [stack.signer.jkt])
            #expect(echo.value("authorization") == nil && echo.value("dpop") == nil)
            #expect(echo.values("x-forwarded-proto") == ["https"])
            #expect(echo.values("x-forwarded-host") == ["api.example.com"])
            #expect(echo.values("x-forwarded-for") == ["127.0.0.1"])
            #expect(echo.value("host") == "127.0.0.1:\(stack.upstreamPort)")
        }
    }

    @Test func percentEncodedPathsAreForwardedAndProvenByteForByte() async throws {
        try await ProxyHarness.run { stack in
            let target = "/v1/files/a%2Fb%20c/%C3%A9t%C3%A9;v=1"
            let reply = try await stack.send(.GET, target)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(try reply.echo().target == target)
            // A proof for the decoded form names another URL.
            let proof = try stack.signer.proof(
                method: "GET", url: SidecarFixtures.origin + "/v1/files/a/b c", accessToken: stack.token)
            let mismatch = try await stack.sidecar.send(
                .GET, target, headers: [("Authorization", "DPoP \(stack.token)"), ("DPoP", proof)])
            #expect(mismatch.status == 401)
        }
    }

    /// Moving 10 MiB through debug builds of the sidecar and the upstream takes many seconds when the whole
    /// suite runs, so the exchanges get minutes instead of the usual seconds.
    @Test func tenMebibyteBodiesStreamBothWays() async throws {
        try await ProxyHarness.run(configure: { settings, _ in
            settings.upstream?.timeoutMilliseconds = 180_000
            settings.upstream?.idleTimeoutMilliseconds = 180_000
        }) { stack in
            let timeout = TimeAmount.seconds(180)
            let block = (0..<4096).map { _ in UInt8.random(in: 0...255) }
            var upload: [UInt8] = []
            upload.reserveCapacity(10 * 1024 * 1024)
            for _ in 0..<(10 * 256) { upload.append(contentsOf: block) }
            let digest = Base64URL.encode(SHA256.hash(data: upload))

            let sized = try await stack.send(
                .POST, "/v1/upload", body: .bytes(ByteBuffer(bytes: upload)), timeout: timeout)
            #expect(sized.status == 200, "\(sized.text)")
            #expect(try sized.echo().bodyBytes == upload.count)
            #expect(try sized.echo().bodySHA256 == digest)

            let chunks = upload.chunked(into: 100_000).map { ByteBuffer(bytes: $0) }
            let chunked = try await stack.send(
                .PUT, "/v1/upload", body: .stream(ChunkSequence(chunks: chunks), length: .unknown), timeout: timeout)
            #expect(chunked.status == 200, "\(chunked.text)")
            #expect(try chunked.echo().bodySHA256 == digest)

            let size = 10 * 1024 * 1024
            let download = try await stack.send(.GET, "/download/\(size)", timeout: timeout)
            #expect(download.status == 200)
            #expect(download.body.readableBytes == size)
            #expect(download.header("Content-Type") == "application/octet-stream")
            #expect(Data(SHA256.hash(data: download.body.readableBytesView)) == TestUpstream.downloadDigest(size))
        }
    }

    @Test func otherMethodsAndEmptyBodiesPassThrough() async throws {
        try await ProxyHarness.run { stack in
            for method: HTTPMethod in [.DELETE, .PATCH, .OPTIONS, .PUT] {
                let reply = try await stack.send(method, "/v1/orders/7")
                #expect(reply.status == 200, "\(method) \(reply.text)")
                #expect(try reply.echo().method == method.rawValue)
                #expect(try reply.echo().bodyBytes == 0)
            }
            let head = try await stack.send(.HEAD, "/v1/orders/7")
            #expect(head.status == 200)
            #expect(head.body.readableBytes == 0)
        }
    }

    @Test func upstreamDownIs502AndSlowUpstreamIs504() async throws {
        let closedPort = ServiceProcess.freePort()
        try await ProxyHarness.run(configure: { settings, _ in
            settings.upstream = try UpstreamSettings(url: "http://127.0.0.1:\(closedPort)")
        }) { stack in
            let reply = try await stack.send(.GET, "/v1/orders")
            #expect(reply.status == 502)
            #expect(reply.errorCode == "upstream_unavailable")
        }
        try await ProxyHarness.run(configure: { settings, _ in settings.upstream?.timeoutMilliseconds = 300 }) {
            stack in
            let start = ContinuousClock.now
            let reply = try await stack.send(.GET, "/slow/1000")
            #expect(reply.status == 504)
            #expect(reply.errorCode == "upstream_timeout")
            // The 504 itself shows the timeout fired before the answer; the bound only rules out a hang.
            #expect(ContinuousClock.now - start < .seconds(10))
        }
    }

    /// The idle timeout is the longest upstream silence, before the response head (504) and after it
    /// (the client connection is closed, as the answer cannot be completed); the total timeout still
    /// bounds the wait for the head. One timer per exchange checks both.
    /// The timeouts are seconds long although the pauses that must pass are short: a request that should be
    /// answered still has to be connected, forwarded and answered within them, which on a loaded machine
    /// has taken more than 2 s.
    @Test func upstreamSilenceHitsTheIdleTimeoutBeforeAndAfterTheResponseHead() async throws {
        try await withUpstreamTimeouts(total: 120_000, idle: 6_000) { stack in
            try await Self.expectTimeout(stack, "/slow/60000")
            try await Self.expectCutMidBody(stack, "/stall/60000")
            // A pause shorter than the idle timeout is fine, and the connection pool still works afterwards.
            try await Self.expectStalledAnswer(stack, "/stall/50")
        }
        // Idle longer than total: the total timeout decides while no head has come; once the head is in,
        // only the idle timeout applies, so a pause after it longer than the total timeout is not cut.
        try await withUpstreamTimeouts(total: 6_000, idle: 120_000) { stack in
            try await Self.expectTimeout(stack, "/slow/60000")
            try await Self.expectStalledAnswer(stack, "/stall/9000")
        }
    }

    /// A request that waits for an upstream connection longer than the idle timeout still gets the idle
    /// check once it is forwarded (only the total timeout was left armed then).
    @Test func idleTimeoutAppliesAfterALongWaitForAConnection() async throws {
        try await withUpstreamTimeouts(total: 120_000, idle: 3_000, maxConnections: 1) { stack in
            // One upstream connection per event loop, each kept busy by answers that are never silent for
            // long; eight of them over the loops leave the last request waiting for a connection. They are
            // only load: on a loaded machine one may still be cut, which is not what this test is about.
            try await withThrowingTaskGroup(of: Void.self) { busy in
                for _ in 0..<8 { busy.addTask { _ = try? await stack.send(.GET, "/trickle/2000") } }
                try await Task.sleep(for: .milliseconds(300))
                try await Self.expectCutMidBody(stack, "/stall/45000")
                try await busy.waitForAll()
            }
        }
    }

    /// A stack with these upstream timeouts in front of a ``TimedUpstream`` (the issuer stays on the usual
    /// upstream). It answers from its event loop, so its head is never late however loaded the suite is;
    /// its pauses are 30 s, so a cut is told from its own answer by the outcome, not by timing.
    private func withUpstreamTimeouts(
        total: Int, idle: Int, maxConnections: Int? = nil,
        _ body: @Sendable (ProxyHarness) async throws -> Void
    ) async throws {
        try await TimedUpstream.run { upstreamPort in
            try await ProxyHarness.run(
                configure: { settings, _ in
                    settings.upstream = try UpstreamSettings(url: "http://127.0.0.1:\(upstreamPort)")
                    settings.upstream?.timeoutMilliseconds = total
                    settings.upstream?.idleTimeoutMilliseconds = idle
                    if let maxConnections { settings.upstream?.maxConnections = maxConnections }
                }, body)
        }
    }

    private static func expectTimeout(_ stack: ProxyHarness, _ target: String) async throws {
        let start = ContinuousClock.now
        let reply = try await stack.send(.GET, target)
        #expect(reply.status == 504)
        #expect(reply.errorCode == "upstream_timeout")
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    /// The stall's head arrives, then the sidecar closes the connection during the silence. Told by the
    /// outcome, not by timing: had nothing cut it, the stall would end and the answer complete; the client's
    /// own deadline only runs until the head, so its error would mean the head never came.
    private static func expectCutMidBody(_ stack: ProxyHarness, _ target: String) async throws {
        let cut = await #expect(throws: (any Error).self) { _ = try await stack.send(.GET, target) }
        #expect((cut as? HTTPClientError) != .deadlineExceeded, "no response head within the client's deadline")
    }

    private static func expectStalledAnswer(_ stack: ProxyHarness, _ target: String) async throws {
        let reply = try await stack.send(.GET, target)
        #expect(reply.status == 200)
        #expect(String(buffer: reply.body) == "first;second")
    }

    /// Graceful shutdown quiesces connections: a proxied exchange in flight finishes (the proxy handler,
    /// not Hummingbird's connection handler, knows about it), then its connection closes and the server stops.
    @Test func gracefulShutdownLetsAProxiedRequestFinish() async throws {
        let issuer = try TestIssuer()
        // Told when the upstream has the slow request, so that the shutdown comes while it is under way.
        let slowStarts = SlowStarts()
        try await withLoopbackServer(TestUpstream.router(issuer: issuer) { slowStarts.started() }) {
            port in
            let cluster = try SidecarFixtures.makeCluster()
            defer { cluster.shutdown() }
            let settings = try SidecarFixtures.settings(upstreamPort: port, issuer: issuer.issuer(port: port))
            let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let token = try issuer.token(port: port, boundTo: signer)
            // The port is picked before the sidecar binds it, so another test process may take it first: the
            // service group then ends at once, and the next attempt uses another port.
            for _ in 1...3 {
                var service = try await TestServiceSettings.make(.dpopVerifier, kafkaBrokers: cluster.bootstrapServers)
                service.port = ServiceProcess.freePort()
                let app = try buildApplication(settings: service, sidecar: settings, logger: TestServiceSettings.logger)
                let group = ServiceGroup(configuration: .init(services: [app], logger: TestServiceSettings.logger))
                let sidecar = LiveSidecar(port: service.port, managementPort: service.managementPort)
                let shutdown = ShutdownRequest()
                let exercised = try await withThrowingTaskGroup(of: Bool.self) { tasks in
                    tasks.addTask {
                        try? await group.run()
                        return false
                    }
                    tasks.addTask {
                        try await sidecar.waitUntilReady()
                        let (started, start) = AsyncStream.makeStream(of: Void.self)
                        slowStarts.report(to: start)
                        async let slow = {
                            defer { start.finish() }
                            return try await sidecar.sendDPoP(.GET, "/slow/1500", token: token, signer: signer)
                        }()
                        // The upstream has the request (or the exchange ended without reaching it, which the
                        // expectations below report).
                        for await _ in started { break }
                        shutdown.request()
                        await group.triggerGracefulShutdown()
                        let reply = try await slow
                        #expect(reply.status == 200)
                        #expect(reply.text == "slow")
                        return true
                    }
                    let first = try await tasks.next() ?? false
                    if first {
                        _ = try await tasks.next()  // the server stops after the exchange
                        return true
                    }
                    // Once the shutdown is under way the server may stop before the client has read the
                    // answer it was sent: the exchange's own outcome decides. Before that, a stopped server
                    // never started.
                    guard shutdown.wasRequested else {
                        tasks.cancelAll()
                        return false
                    }
                    return try await tasks.next() ?? false
                }
                if exercised { return }
            }
            Issue.record("the sidecar did not start on any of three ports")
        }
    }

    @Test func spoofedIdentityHeadersAreRemovedBeforeTheRealOnesAreAdded() async throws {
        try await ProxyHarness.run(configure: { settings, _ in settings.publicPaths = try PublicPaths(["/health"]) }) {
            stack in
            let spoofed = [
                ("X-Latchkey-Tenant", "evil"), ("x-latchkey-client-id", "admin"), ("X-LATCHKEY-SUBJECT", "root"),
                ("X-Latchkey-Scope", "admin"), ("X-Latchkey-Jkt", "forged"), ("X-Latchkey-Other", "x"),
            ]
            let echo = try await stack.send(.GET, "/v1/orders", headers: spoofed).echo()
            #expect(echo.values("x-latchkey-tenant") == ["acme"])
            #expect(echo.values("x-latchkey-client-id") == ["client-1"])
            #expect(echo.values("x-latchkey-subject") == ["user-1"])
            #expect(echo.values("x-latchkey-scope") == ["orders:read"])
            #expect(echo.values("x-latchkey-jkt") == [stack.signer.jkt])
            #expect(echo.values("x-latchkey-other").isEmpty)

            // A public path carries no identity at all, and still none of the spoofed values.
            let open = try await stack.sidecar.send(.GET, "/health", headers: spoofed).echo()
            #expect(!open.headers.contains { $0[0].hasPrefix("x-latchkey-") })
        }
    }

    @Test func hostSpoofingDoesNotChangeHtu() async throws {
        try await ProxyHarness.run { stack in
            // The proof names the attacker's host and the request claims it: still checked against the configured origin.
            let evilProof = try stack.signer.proof(
                method: "GET", url: "https://evil.example.com/v1/orders", accessToken: stack.token)
            let evil = try await stack.sidecar.send(
                .GET, "/v1/orders",
                headers: [
                    ("Host", "evil.example.com"), ("X-Forwarded-Host", "evil.example.com"),
                    ("Forwarded", "host=evil.example.com;proto=https"),
                    ("Authorization", "DPoP \(stack.token)"), ("DPoP", evilProof),
                ])
            #expect(evil.status == 401)
            #expect(evil.header("WWW-Authenticate")?.contains("htu does not match") == true)

            // A proof for the real origin passes whatever Host says, and forwarding headers from an
            // untrusted peer are replaced by the sidecar's own.
            let good = try await stack.send(
                .GET, "/v1/orders",
                headers: [
                    ("Host", "evil.example.com"), ("X-Forwarded-Host", "evil.example.com"),
                    ("X-Forwarded-For", "6.6.6.6"),
                    ("Forwarded", "for=6.6.6.6"),
                ])
            #expect(good.status == 200, "\(good.text)")
            let echo = try good.echo()
            #expect(echo.values("x-forwarded-host") == ["api.example.com"])
            #expect(echo.values("x-forwarded-for") == ["127.0.0.1"])
            #expect(echo.values("forwarded").isEmpty)
        }
    }

    @Test func hostSelectsOnlyAmongConfiguredOriginsAndTrustedProxiesMaySayWhich() async throws {
        try await ProxyHarness.run(configure: { settings, _ in
            settings.origins = try ExternalOrigins(["https://api.example.com", "https://api.example.org:8443"])
        }) { stack in
            let org = "https://api.example.org:8443"
            let viaHost = try await stack.send(
                .GET, "/v1/orders", headers: [("Host", "API.example.org:8443")], origin: org)
            #expect(viaHost.status == 200, "\(viaHost.text)")
            // From an untrusted peer X-Forwarded-Host is ignored: the primary origin applies.
            let untrusted = try await stack.send(
                .GET, "/v1/orders", headers: [("X-Forwarded-Host", "api.example.org:8443")], origin: org)
            #expect(untrusted.status == 401)
        }
        try await ProxyHarness.run(configure: { settings, _ in
            settings.origins = try ExternalOrigins(["https://api.example.com", "https://api.example.org"])
            settings.trustedProxies = try TrustedProxies(["127.0.0.0/8"])
        }) { stack in
            let trusted = try await stack.send(
                .GET, "/v1/orders",
                headers: [
                    ("X-Forwarded-Host", "api.example.org"), ("X-Forwarded-Proto", "https"),
                    ("X-Forwarded-For", "203.0.113.9"),
                ], origin: "https://api.example.org")
            #expect(trusted.status == 200, "\(trusted.text)")
            #expect(try trusted.echo().values("x-forwarded-for") == ["203.0.113.9, 127.0.0.1"])
            let viaForwarded = try await stack.send(
                .GET, "/v1/orders", headers: [("Forwarded", "for=1.2.3.4;host=api.example.org;proto=https")],
                origin: "https://api.example.org")
            #expect(viaForwarded.status == 200, "\(viaForwarded.text)")
        }
    }

    @Test func hopByHopHeadersAreNotForwarded() async throws {
        try await ProxyHarness.run { stack in
            let echo = try await stack.send(
                .GET, "/v1/orders",
                headers: [
                    ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"),
                    ("TE", "trailers"),
                    ("Proxy-Authorization", "Basic c2VjcmV0"), ("X-End-To-End", "kept"),
                ]
            ).echo()
            for name in ["x-hop", "keep-alive", "te", "proxy-authorization"] {
                #expect(echo.value(name) == nil, "\(name)")
            }
            #expect(echo.value("x-end-to-end") == "kept")
        }
    }

    @Test func credentialsAreForwardedOnlyWhenConfigured() async throws {
        try await ProxyHarness.run(configure: { settings, _ in settings.forwardCredentials = true }) { stack in
            let echo = try await stack.send(.GET, "/v1/orders").echo()
            #expect(echo.value("authorization") == "DPoP \(stack.token)")
            #expect(echo.value("dpop") != nil)
        }
    }

    @Test func publicPathsSkipAuthButOnlyInCanonicalForm() async throws {
        try await ProxyHarness.run(configure: { settings, _ in
            settings.publicPaths = try PublicPaths(["/health", "/public/*"])
        }) { stack in
            let health = try await stack.sidecar.send(.GET, "/health")
            #expect(health.status == 200)
            #expect(try health.echo().headers.allSatisfy { !$0[0].hasPrefix("x-latchkey-") })
            let logo = try await stack.sidecar.send(.GET, "/public/logo.png?v=2")
            #expect(logo.status == 200)
            for sneaky in [
                "/public/../admin", "/public/%2e%2e/admin", "/public%2F../admin", "/health/", "/healthz-not",
            ] {
                let reply = try await stack.sidecar.send(.GET, sneaky)
                #expect(reply.status == 401, "\(sneaky)")
            }
        }
    }

    @Test func missingOrMalformedAuthorizationGetsTheRightChallenge() async throws {
        try await ProxyHarness.run { stack in
            let bare = try await stack.sidecar.send(.GET, "/v1/orders")
            #expect(bare.status == 401)
            #expect(bare.headers("WWW-Authenticate") == [#"DPoP algs="ES256 ES384 PS256 RS256 EdDSA""#])
            #expect(bare.header("Cache-Control") == "no-store")

            let basic = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "Basic dXNlcjpwYXNz")])
            #expect(basic.status == 401)
            #expect(basic.header("WWW-Authenticate")?.contains("error=") == false)

            let two = try await stack.sidecar.send(
                .GET, "/v1/orders",
                headers: [
                    ("Authorization", "DPoP \(stack.token)"), ("Authorization", "DPoP \(stack.token)"),
                ])
            #expect(two.status == 400)
            #expect(two.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="invalid_request""#) == true)

            let notToken68 = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "DPoP a b\"c")])
            #expect(notToken68.status == 400)

            let noProof = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "DPoP \(stack.token)")])
            #expect(noProof.status == 401)
            #expect(
                noProof.header("WWW-Authenticate")?.hasPrefix(
                    #"DPoP error="invalid_dpop_proof", error_description="missing DPoP header""#) == true)
        }
    }

    @Test func bearerDowngradeAndUnboundTokensFollowTheBearerPolicy() async throws {
        try await ProxyHarness.run { stack in
            // Bearer not allowed (default): even an unbound token is refused.
            let unbound = try stack.issuer.token(port: stack.upstreamPort, boundTo: nil)
            let refused = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "Bearer \(unbound)")])
            #expect(refused.status == 401)
            #expect(refused.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="invalid_token""#) == false)
            #expect(refused.errorCode == "invalid_token")

            // DPoP scheme with a token that has no cnf.
            let proof = try stack.signer.proof(
                method: "GET", url: SidecarFixtures.origin + "/v1/orders", accessToken: unbound)
            let noCnf = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "DPoP \(unbound)"), ("DPoP", proof)])
            #expect(noCnf.status == 401)
            #expect(noCnf.header("WWW-Authenticate")?.hasPrefix(#"DPoP error="invalid_token""#) == true)
        }
        try await ProxyHarness.run(configure: { settings, _ in settings.allowBearer = true }) { stack in
            let downgrade = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "Bearer \(stack.token)")])
            #expect(downgrade.status == 401)
            #expect(
                downgrade.headers("WWW-Authenticate").contains {
                    $0.hasPrefix(
                        #"Bearer error="invalid_token", error_description="a DPoP-bound token was presented as a Bearer token""#
                    )
                })
            let unbound = try stack.issuer.token(port: stack.upstreamPort, boundTo: nil)
            let bearer = try await stack.sidecar.send(
                .GET, "/v1/orders", headers: [("Authorization", "Bearer \(unbound)")])
            #expect(bearer.status == 200, "\(bearer.text)")
            let echo = try bearer.echo()
            #expect(echo.values("x-latchkey-client-id") == ["client-1"])
            #expect(echo.values("x-latchkey-jkt").isEmpty)
            let bare = try await stack.sidecar.send(.GET, "/v1/orders")
            #expect(bare.headers("WWW-Authenticate") == [#"DPoP algs="ES256 ES384 PS256 RS256 EdDSA""#, "Bearer"])
        }
    }

    @Test func tokenClaimsAreCheckedAgainstTheIssuerAndConfiguration() async throws {
        try await ProxyHarness.run { stack in
            let port = stack.upstreamPort
            let now = Int64(Date().timeIntervalSince1970)
            func attempt(_ token: String) async throws -> Reply {
                try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: token, signer: stack.signer)
            }
            var expired = stack.issuer.claims(port: port, jkt: stack.signer.jkt, now: now - 400)
            expired.exp = now - 60
            var future = stack.issuer.claims(port: port, jkt: stack.signer.jkt)
            future.nbf = now + 120
            var audience = stack.issuer.claims(port: port, jkt: stack.signer.jkt)
            audience.aud = ["https://other.example.com"]
            var issuer = stack.issuer.claims(port: port, jkt: stack.signer.jkt)
            issuer.iss = "http://127.0.0.1:\(port)/t/other"
            // Longer-lived than the sidecar accepts (a day by default): its revocation might be forgotten before it expires.
            let longLived = stack.issuer.claims(port: port, jkt: stack.signer.jkt, lifetime: 86_401)
            let cases: [(String, String)] = [
                (try stack.issuer.sign(expired), "expired"),
                (try stack.issuer.sign(future), "not yet valid"),
                (try stack.issuer.sign(audience), "audience"),
                (try stack.issuer.sign(issuer), "issuer"),
                (try stack.issuer.sign(longLived), "lifetime"),
                (try stack.issuer.sign(stack.issuer.claims(port: port, jkt: stack.signer.jkt), typ: "JWT"), "typ"),
                (
                    try stack.issuer.sign(stack.issuer.claims(port: port, jkt: stack.signer.jkt), kid: "k1") + "x",
                    "signature"
                ),
            ]
            for (token, expectation) in cases {
                let reply = try await attempt(token)
                #expect(reply.status == 401, "\(expectation)")
                let challenge = reply.header("WWW-Authenticate") ?? ""
                #expect(challenge.hasPrefix(#"DPoP error="invalid_token""#), "\(expectation): \(challenge)")
                #expect(challenge.contains(expectation), "\(expectation): \(challenge)")
            }
            // A token bound to another key: the proof's key does not match cnf.jkt.
            let other = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let stolen = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: stack.token, signer: other)
            #expect(stolen.status == 401)
            #expect(stolen.header("WWW-Authenticate")?.contains("cnf.jkt") == true)
        }
    }

    @Test func keyRotationRefetchesTheJWKSOnceForAnUnknownKid() async throws {
        // The sidecar's clock is driven by the test, so the refresh interval does not depend on how fast a
        // loaded machine runs the requests (proofs stay within the 60 s iat window).
        let clock = FixedWallClock(Date())
        var overrides = SidecarOverrides()
        overrides.clock = clock
        try await ProxyHarness.run(
            configure: { settings, _ in settings.jwksMinimumRefreshSeconds = 30 }, overrides: overrides
        ) { stack in
            #expect(try await stack.send(.GET, "/v1/orders").status == 200)
            let fetches = stack.issuer.jwksFetches
            try stack.issuer.addKey(kid: "k2")
            let rotated = try stack.issuer.sign(
                stack.issuer.claims(port: stack.upstreamPort, jkt: stack.signer.jkt), kid: "k2")
            // Within the interval a kid miss does not refetch.
            #expect(
                try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: rotated, signer: stack.signer).status == 401
            )
            #expect(stack.issuer.jwksFetches == fetches)
            clock.advance(by: 31)  // a kid miss refreshes at most once per interval
            #expect(
                try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: rotated, signer: stack.signer).status == 200
            )
            #expect(stack.issuer.jwksFetches == fetches + 1)
            // The same token again is served from the token cache: no fetch, no failure.
            #expect(
                try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: rotated, signer: stack.signer).status == 200
            )
            // Unknown kids right after a refresh do not trigger another fetch (rate limit).
            let forged = try CompactJWS.sign(
                claims: stack.issuer.claims(port: stack.upstreamPort, jkt: stack.signer.jkt),
                using: try SigningKey.generate(.es256),
                header: JWSHeaderParameters(typ: "at+jwt", kid: "k-unknown"))
            for _ in 0..<5 {
                #expect(
                    try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: forged, signer: stack.signer).status
                        == 401)
            }
            #expect(stack.issuer.jwksFetches == fetches + 1)
        }
    }

    @Test func issuerOutageWithoutCachedKeysIs503AndStaleKeysKeepServing() async throws {
        try await ProxyHarness.run(configure: { settings, _ in settings.jwksMaxAgeSeconds = 1 }) { stack in
            stack.issuer.setFailing(true)
            let outage = try await stack.send(.GET, "/v1/orders")
            #expect(outage.status == 503)
            #expect(outage.header("Retry-After") == "1")
            #expect(outage.errorCode == "temporarily_unavailable")
            stack.issuer.setFailing(false)
            try await Task.sleep(for: .milliseconds(1_100))  // past the missing-keys retry pause
            #expect(try await stack.send(.GET, "/v1/orders").status == 200)
            stack.issuer.setFailing(true)
            try await Task.sleep(for: .milliseconds(1_100))  // keys now older than their max age
            let fresh = try stack.issuer.token(port: stack.upstreamPort, boundTo: stack.signer)
            let stale = try await stack.sidecar.sendDPoP(.GET, "/v1/orders", token: fresh, signer: stack.signer)
            #expect(stale.status == 200, "stale-while-error: \(stale.text)")
        }
    }

    @Test func metricsCountOutcomesAndReasons() async throws {
        try await ProxyHarness.run(
            overrides: {
                var overrides = SidecarOverrides()
                overrides.gaugeInterval = .milliseconds(50)
                return overrides
            }()
        ) { stack in
            #expect(try await stack.send(.GET, "/v1/orders").status == 200)
            #expect(try await stack.sidecar.send(.GET, "/v1/orders").status == 401)
            try await Task.sleep(for: .milliseconds(200))
            // The sidecar's own document and metrics are on the management port; on the proxy port those
            // paths belong to the API and are verified like any other.
            let document = try await stack.sidecar.management("/openapi.json")
            #expect(document.status == 200)
            #expect(
                document.text.contains(#""title":"#) && document.text.contains("/check"), "\(document.text.prefix(200))"
            )
            for path in ["/openapi.json", "/metrics", "/healthz", "/readyz"] {
                #expect(try await stack.sidecar.send(.GET, path).status == 401, "\(path) on the proxy port")
                #expect(try await stack.send(.GET, path).header("X-Upstream") == "echo", "\(path) reaches the API")
            }
            let metrics = try await stack.sidecar.management("/metrics").text
            for expected in [
                #"latchkey_dpop_requests_total{outcome="allowed",reason="dpop"}"#,
                #"latchkey_dpop_requests_total{outcome="rejected",reason="missing_credentials"}"#,
                "latchkey_dpop_verification_duration_seconds_bucket",
                "latchkey_dpop_replay_cache_entries", "latchkey_dpop_replay_cache_evictions_total",
                "latchkey_dpop_token_cache_entries", "latchkey_dpop_revoked_clients",
                "latchkey_dpop_revocation_consumer_lag_messages",
                #"latchkey_dpop_jwks_refreshes_total{tenant="acme",outcome="success"}"#,
            ] {
                #expect(metrics.contains(expected), "\(expected)")
            }
        }
    }
}

extension Array {
    func chunked(into size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}

/// A fixed list of chunks as an async sequence (a chunked request body).
struct ChunkSequence: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunks: [ByteBuffer]

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<ByteBuffer>
        mutating func next() async -> ByteBuffer? { remaining.popFirst() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: chunks[...]) }
}

/// Whether a test has asked its service group to shut down.
private final class ShutdownRequest: Sendable {
    private let requested = Mutex(false)

    func request() { requested.withLock { $0 = true } }

    var wasRequested: Bool { requested.withLock { $0 } }
}

/// Where the upstream reports a slow request reaching it: to the stream of the current attempt.
private final class SlowStarts: Sendable {
    private let current = Mutex<AsyncStream<Void>.Continuation?>(nil)

    /// Where the next reports go.
    func report(to continuation: AsyncStream<Void>.Continuation) { current.withLock { $0 = continuation } }

    func started() { current.withLock { _ = $0?.yield() } }
}
