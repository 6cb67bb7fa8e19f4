import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// An upstream that sends more than the response asked for (a body on a HEAD answer, a response behind a 204) must
/// not make the sidecar hand those bytes to the next client, as its response or as a broken one. Whether the extra
/// bytes are a whole response or one whose rest follows later, the connection they came on carries nothing more.
@Suite struct UpstreamDesyncAttackTests {
    @Test func leftoverBytesAfterAHeadOr204AnswerNeverReachTheNextClient() async throws {
        let upstream = try LeftoverUpstream()
        defer { upstream.stop() }
        try await SeededPlatform.run(settings: [
            "DPOP_UPSTREAM_URL": "http://127.0.0.1:\(upstream.port)", "DPOP_PUBLIC_PATHS": "/public/*",
            // One event loop with one upstream connection: the second client waits for the connection the first
            // one's exchange is using, and gets it as soon as that response ends.
            "NIO_SINGLETON_GROUP_LOOP_COUNT": "1", "DPOP_UPSTREAM_MAX_CONNECTIONS": "1",
        ]) { platform in
            let port = try #require(platform.processes.ports["dpop-verifier"])
            let cases = [
                ("HEAD", "/public/head-whole", 200), ("HEAD", "/public/head-split", 200),
                ("GET", "/public/empty-whole", 204), ("GET", "/public/empty-split", 204),
            ]
            for (method, path, status) in cases {
                let decided = try await decisions(platform)
                let first = try RawHTTPConnection(port: port)
                try first.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                try await upstream.waitForRequest(path)
                let second = try RawHTTPConnection(port: port)
                try second.send("GET /public/second HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                // A public path is decided at once, and the request then queues for the pool's only connection (on
                // the same event loop, before `/metrics` can answer).
                guard try await eventually(within: .seconds(30), { try await decisions(platform) >= decided + 2 })
                else {
                    throw TestFailure("the second request was never decided")
                }
                upstream.release(path)

                let answered = try first.readResponse(bodyless: true)
                #expect(answered.status == status, "\(method) \(path): \(answered.head)")
                let next = try second.readResponse(bodyless: false)
                #expect(
                    !next.body.contains(LeftoverUpstream.leftover),
                    "after \(method) \(path) the next client got the upstream's leftover bytes as its response")
                #expect(
                    next.status == 200 && next.body == "second", "after \(method) \(path): \(next.status) \(next.body)")
            }
            #expect(
                upstream.requests.filter { $0.hasSuffix("/public/second") }.count == cases.count, "\(upstream.requests)"
            )
        }
    }

    /// Decisions the sidecar has taken so far (its verification histogram's count).
    func decisions(_ platform: SeededPlatform) async throws -> Int {
        let metrics = try await platform.http.get("\(platform.management("dpop-verifier"))/metrics")
        guard metrics.status == 200 else { throw TestFailure("/metrics answered \(metrics.status)") }
        let line = metrics.body.split(separator: "\n").first {
            $0.hasPrefix("latchkey_dpop_verification_duration_seconds_count ")
        }
        return line?.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } ?? 0
    }
}
