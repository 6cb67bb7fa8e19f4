import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyTestSupport
import NIOCore
import Testing

@testable import LatchkeyCLI

/// What reaches the API behind the sidecar: public paths only in canonical form, identity headers only
/// from the sidecar.
@Suite struct SidecarSpoofingAttackTests {
    /// Records the path and header names of every request it gets and answers 200.
    final class RecordingUpstream: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [(path: String, headers: [String])] = []

        var requests: [(path: String, headers: [String])] { lock.withLock { seen } }

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.on("**", method: .get) { request, _ -> String in
                self.lock.withLock { self.seen.append((request.uri.path, request.headers.map { $0.name.rawName })) }
                return "upstream"
            }
            return router
        }
    }

    @Test func publicPathsWithSemicolonsOrPercentUEscapesNeedAToken() async throws {
        let upstream = RecordingUpstream()
        try await withLoopbackServer(upstream.router()) { port in
            try await SeededPlatform.run(settings: [
                "DPOP_UPSTREAM_URL": "http://127.0.0.1:\(port)", "DPOP_PUBLIC_PATHS": "/health,/public/*",
            ]) { platform in
                let sidecar = platform.endpoints.sidecar
                let control = try await platform.http.get("\(sidecar)/public/ok")
                #expect(control.status == 200, "control: a public path is forwarded")
                for path in ["/public/..;/admin", "/public/;/admin", "/public/x;jsessionid=1"] {
                    let response = try await platform.http.get(sidecar + path)
                    #expect(response.status == 401, "\(path) without a token: \(response.status)")
                }
                // Written raw: an HTTP client would re-encode the invalid `%u` escape as `%25u`.
                let port = platform.processes.ports["dpop-verifier"] ?? 0
                for path in ["/public/%u002e%u002e/admin", "/public/%U002E./admin", "/public/..%u003b/admin"] {
                    let status = try rawHTTPStatus(
                        port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    #expect([400, 401].contains(status), "\(path) without a token: \(status)")
                }
                #expect(upstream.requests.map(\.path) == ["/public/ok"], "\(upstream.requests.map(\.path))")
            }
        }
    }

    @Test func identityHeadersSpelledWithUnderscoresNeverReachTheUpstream() async throws {
        let upstream = RecordingUpstream()
        try await withLoopbackServer(upstream.router()) { port in
            try await SeededPlatform.run(settings: [
                "DPOP_UPSTREAM_URL": "http://127.0.0.1:\(port)", "DPOP_PUBLIC_PATHS": "/public/*",
            ]) { platform in
                let spoofed = [
                    ("X_Latchkey_Subject", "admin"), ("x_latchkey_tenant", "other"), ("X-Latchkey_Client-Id", "victim"),
                    ("X_LATCHKEY_SCOPE", "admin"), ("X-Latchkey-Jkt", "forged"),
                ]
                let forwarded = try await platform.http.get(
                    "\(platform.endpoints.sidecar)/public/whoami", headers: spoofed)
                #expect(forwarded.status == 200)
                let received = upstream.requests.first?.headers ?? []
                #expect(!received.isEmpty, "the upstream saw no request")
                let leaked = received.filter {
                    $0.lowercased().replacingOccurrences(of: "_", with: "-").hasPrefix("x-latchkey-")
                }
                #expect(leaked.isEmpty, "spoofed identity headers reached the upstream: \(leaked)")
            }
        }
    }
}
