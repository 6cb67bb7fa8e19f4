import AsyncHTTPClient
import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Testing

@testable import DPoPVerifier

/// `ClientRevoked` on the embedded Kafka cluster → the client's tokens are refused.
@Suite struct RevocationTests {
    /// With the brokers gone, Kafka calls wait out their timeouts without a cancellation point; the
    /// sidecar stopped on SIGTERM only when killed. The listener now ends within its grace period.
    @Test func gracefulShutdownEndsInBoundedTimeWhenKafkaIsGone() async throws {
        let cluster = try SidecarFixtures.makeCluster()
        let kafka = KafkaTestSupport.configuration(cluster, clientID: "revocation-shutdown-test")
        // Errors only: the handles the listener abandons to stop in time keep reporting the missing
        // brokers for the rest of the test run.
        let logger = KafkaTestSupport.logger("revocation-shutdown")
        let revocations = RevokedClients()
        var listener = RevocationListener(
            kafka: kafka, admin: try KafkaAdmin(configuration: kafka, logger: logger),
            topic: SidecarFixtures.revokedTopic, tokenTopic: SidecarFixtures.tokenRevokedTopic,
            userTopic: SidecarFixtures.userDisabledTopic, revocations: revocations, metrics: .shared,
            logger: logger)
        listener.shutdownGrace = .seconds(1)
        listener.lagInterval = .milliseconds(100)
        let group = ServiceGroup(configuration: .init(services: [listener], logger: TestServiceSettings.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for _ in 0..<400 where !revocations.isLoaded { try await Task.sleep(for: .milliseconds(50)) }
            #expect(revocations.isLoaded)
            cluster.shutdown()
            try await Task.sleep(for: .milliseconds(500))  // the lag loop is now inside watermark queries that time out
            let started = ContinuousClock.now
            await group.triggerGracefulShutdown()
            try await tasks.next()
            // The grace is 1 s; without it the shutdown never ends, so the bound can be loose enough for a machine
            // loaded by the whole suite.
            #expect(ContinuousClock.now - started < .seconds(15))
        }
    }

    @Test func revokedClientIsRefusedWithinSecondsAndAfterARestart() async throws {
        let cluster = try SidecarFixtures.makeCluster()
        defer { cluster.shutdown() }
        let issuer = try TestIssuer()
        try await withLoopbackServer(TestUpstream.router(issuer: issuer)) { port in
            let settings = try SidecarFixtures.settings(upstreamPort: port, issuer: issuer.issuer(port: port))
            let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let doomed = try issuer.token(port: port, boundTo: signer, clientID: "stolen-phone")
            let other = try issuer.token(port: port, boundTo: signer, clientID: "other-phone")

            try await withLiveSidecar(settings, cluster: cluster) { sidecar in
                #expect(try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer).status == 200)
                let start = ContinuousClock.now
                try await RevocationPublisher.revoke(tenant: "acme", clientID: "stolen-phone", on: cluster)
                var refused: Reply?
                // "Within seconds": 5 s on a quiet machine; the bound leaves room for the whole suite's load.
                while ContinuousClock.now - start < .seconds(10) {
                    let reply = try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer)
                    if reply.status == 401 {
                        refused = reply
                        break
                    }
                    #expect(reply.status == 200)
                    try await Task.sleep(for: .milliseconds(50))
                }
                let reply = try #require(refused, "still accepted 10 s after ClientRevoked")
                #expect(
                    reply.header("WWW-Authenticate")?.hasPrefix(
                        #"DPoP error="invalid_token", error_description="the client has been revoked""#) == true)
                #expect(try await sidecar.sendDPoP(.GET, "/v1/orders", token: other, signer: signer).status == 200)
            }

            // A new replica rebuilds the set from the beginning of the topic before it is ready.
            try await withLiveSidecar(settings, cluster: cluster) { sidecar in
                let refused = try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer)
                #expect(refused.status == 401)
                let accepted = try await sidecar.sendDPoP(.GET, "/v1/orders", token: other, signer: signer)
                #expect(accepted.status == 200)
            }
        }
    }

    @Test func disabledUsersTokensAreRefusedUntilTheUserIsEnabledAgain() async throws {
        let cluster = try SidecarFixtures.makeCluster()
        defer { cluster.shutdown() }
        let issuer = try TestIssuer()
        try await withLoopbackServer(TestUpstream.router(issuer: issuer)) { port in
            let settings = try SidecarFixtures.settings(upstreamPort: port, issuer: issuer.issuer(port: port))
            let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let user = UUID()
            var claims = issuer.claims(port: port, jkt: signer.jkt, clientID: "static-web")
            claims.sub = user.uuidString.lowercased()
            let doomed = try issuer.sign(claims)
            claims.sub = UUID().uuidString.lowercased()
            claims.jti = UUID().uuidString.lowercased()
            let other = try issuer.sign(claims)
            // The same user id in another tenant is another user.
            try await RevocationPublisher.setUser(
                tenant: "other-tenant", userID: UUID(uuidString: claims.sub)!, disabled: true, on: cluster)

            try await withLiveSidecar(settings, cluster: cluster) { sidecar in
                #expect(try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer).status == 200)
                #expect(try await sidecar.sendDPoP(.GET, "/v1/orders", token: other, signer: signer).status == 200)
                let start = ContinuousClock.now
                try await RevocationPublisher.setUser(tenant: "acme", userID: user, disabled: true, on: cluster)
                var refused: Reply?
                while ContinuousClock.now - start < .seconds(10) {
                    let reply = try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer)
                    if reply.status == 401 {
                        refused = reply
                        break
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                let reply = try #require(refused, "still accepted 10 s after UserDisabled")
                #expect(
                    reply.header("WWW-Authenticate")?.hasPrefix(
                        #"DPoP error="invalid_token", error_description="the user has been disabled""#) == true)
                #expect(try await sidecar.sendDPoP(.GET, "/v1/orders", token: other, signer: signer).status == 200)
            }

            // A new replica replays the topic: still refused, until UserEnabled.
            try await withLiveSidecar(settings, cluster: cluster) { sidecar in
                #expect(try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer).status == 401)
                try await RevocationPublisher.setUser(tenant: "acme", userID: user, disabled: false, on: cluster)
                var status = 401
                _ = try await eventually(within: .seconds(10)) {
                    status = try await sidecar.sendDPoP(.GET, "/v1/orders", token: doomed, signer: signer).status
                    return status != 401
                }
                #expect(status == 200, "still refused after UserEnabled")
            }
        }
    }

    @Test func malformedRecordsAreSkippedAndTenantsKeptApart() async throws {
        let cluster = try SidecarFixtures.makeCluster()
        defer { cluster.shutdown() }
        try await RevocationPublisher.publish(key: "acme/x", value: Array("not an event".utf8), on: cluster)
        try await RevocationPublisher.revoke(tenant: "other-tenant", clientID: "client-1", on: cluster)
        try await ProxyHarness.run(cluster: cluster) { stack in
            // client-1 of another tenant is revoked, not acme's client-1.
            #expect(try await stack.send(.GET, "/v1/orders").status == 200)
            try await RevocationPublisher.revoke(tenant: "acme", clientID: "client-1", on: cluster)
            var status = 200
            _ = try await eventually(within: .seconds(5)) {
                status = try await stack.send(.GET, "/v1/orders").status
                return status != 200
            }
            #expect(status == 401)
            let metrics = try await stack.sidecar.management("/metrics").text
            #expect(metrics.contains(#"latchkey_dpop_revocation_events_total{outcome="malformed"}"#))
            // Caught up with the topics: the staleness alert's timestamp is recent (the lag report runs every 5 s).
            let started = Date().timeIntervalSince1970
            try await eventually("revocation stream caught up", within: .seconds(30)) {
                let text = try await stack.sidecar.management("/metrics").text
                let caughtUp = PrometheusText.value(text, "latchkey_dpop_revocation_stream_caught_up_timestamp_seconds")
                return (caughtUp ?? 0) >= started
            }
        }
    }

    @Test func withoutTheRevocationListTheSidecarRefusesToDecide() async throws {
        let issuer = try TestIssuer()
        try await withLoopbackServer(TestUpstream.router(issuer: issuer)) { port in
            let settings = try SidecarFixtures.settings(upstreamPort: port, issuer: issuer.issuer(port: port))
            // No revocation topic on this cluster.
            let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: TestServiceSettings.logger)
            defer { cluster.shutdown() }
            try await withLiveSidecar(settings, cluster: cluster, waitUntilReady: false) { sidecar in
                let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
                let reply = try await sidecar.sendDPoP(
                    .GET, "/v1/orders", token: try issuer.token(port: port, boundTo: signer),
                    signer: signer)
                #expect(reply.status == 503)
                #expect(reply.errorCode == "temporarily_unavailable")
                let ready = try await sidecar.management("/readyz")
                #expect(ready.status == 503)
                #expect(ready.text.contains(#""revocations":"failing""#))
            }
        }
    }
}
