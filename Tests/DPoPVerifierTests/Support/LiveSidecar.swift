import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import Testing

@testable import DPoPVerifier

/// One answer of the sidecar, fully read.
struct Reply: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: ByteBuffer

    var text: String { String(buffer: body) }
    func header(_ name: String) -> String? { headers.first(name: name) }
    func headers(_ name: String) -> [String] { headers[name] }

    /// The upstream's echo of the forwarded request.
    func echo() throws -> EchoedRequest {
        guard header("X-Upstream") == "echo" else { throw TestFailure("not an upstream echo: \(status) \(text)") }
        return try JSONDecoder().decode(EchoedRequest.self, from: Data(buffer: body))
    }

    /// The `error` member of a JSON error body.
    var errorCode: String? { TestJSON.object(body.readableBytesView)["error"] as? String }
}

/// A running sidecar (the full application: PostgreSQL, embedded Kafka, revocation listener) on
/// loopback, driven over real sockets with AsyncHTTPClient.
struct LiveSidecar: Sendable {
    let port: Int
    /// Health, readiness, metrics and the OpenAPI document.
    let managementPort: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }

    func send(
        _ method: HTTPMethod = .GET, _ target: String, headers: [(String, String)] = [],
        body: HTTPClientRequest.Body? = nil, timeout: TimeAmount = .seconds(20)
    ) async throws -> Reply {
        try await send(to: baseURL, method, target, headers: headers, body: body, timeout: timeout)
    }

    /// GET `target` on the management port.
    func management(_ target: String, timeout: TimeAmount = .seconds(20)) async throws -> Reply {
        try await send(to: "http://127.0.0.1:\(managementPort)", .GET, target, timeout: timeout)
    }

    private func send(
        to base: String, _ method: HTTPMethod, _ target: String, headers: [(String, String)] = [],
        body: HTTPClientRequest.Body? = nil, timeout: TimeAmount
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + target)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = body
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let collected = try await response.body.collect(upTo: 64 * 1024 * 1024)
        return Reply(status: Int(response.status.code), headers: response.headers, body: collected)
    }

    /// Sends a request with a fresh proof for `origin + target` and `token` as `DPoP`.
    func sendDPoP(
        _ method: HTTPMethod = .GET, _ target: String, token: String, signer: DPoPProofSigner,
        origin: String = SidecarFixtures.origin, nonce: String? = nil, headers: [(String, String)] = [],
        body: HTTPClientRequest.Body? = nil, timeout: TimeAmount = .seconds(20)
    ) async throws -> Reply {
        let proof = try signer.proof(method: method.rawValue, url: origin + target, accessToken: token, nonce: nonce)
        return try await send(
            method, target, headers: [("Authorization", "DPoP \(token)"), ("DPoP", proof)] + headers, body: body,
            timeout: timeout)
    }

    /// Polls `/readyz` until it answers 200 (the revocation backlog is read; generous for a loaded machine).
    func waitUntilReady(within limit: Duration = .seconds(45)) async throws {
        guard
            try await eventually(
                within: limit, { (try? await management("/readyz", timeout: .seconds(2)))?.status == 200 })
        else {
            throw TestFailure("the sidecar did not become ready within \(limit)")
        }
    }
}

/// Settings and environment shared by the live tests.
enum SidecarFixtures {
    static let origin = "https://api.example.com"
    static let audience = "https://api.example.com"
    static let revokedTopic = LatchkeyEventType.clientRevoked.topic()
    static let tokenRevokedTopic = LatchkeyEventType.tokenRevoked.topic()
    static let userDisabledTopic = LatchkeyEventType.userDisabled.topic()

    static func settings(upstreamPort: Int, issuer: String, mode: SidecarSettings.Mode = .proxy) throws
        -> SidecarSettings
    {
        var upstream = try UpstreamSettings(url: "http://127.0.0.1:\(upstreamPort)")
        // Generous: the suite shares two CPUs with every other suite.
        upstream.connectTimeoutMilliseconds = 5_000
        upstream.timeoutMilliseconds = 15_000
        upstream.idleTimeoutMilliseconds = 15_000
        return SidecarSettings(
            mode: mode, upstream: mode == .proxy ? upstream : nil, origins: try ExternalOrigins([origin]),
            issuers: [issuer], audiences: [audience])
    }

    /// An embedded Kafka cluster with the revocation topics.
    static func makeCluster() throws -> EmbeddedKafkaCluster {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: TestServiceSettings.logger)
        try cluster.createTopic(revokedTopic, partitions: 2)
        try cluster.createTopic(tokenRevokedTopic, partitions: 2)
        try cluster.createTopic(userDisabledTopic, partitions: 2)
        return cluster
    }
}

/// Builds the full application with `settings` and runs `body` against it on a real socket.
func withLiveSidecar<T: Sendable>(
    _ settings: SidecarSettings, overrides: SidecarOverrides = SidecarOverrides(), cluster: EmbeddedKafkaCluster? = nil,
    waitUntilReady: Bool = true, _ body: @Sendable (LiveSidecar) async throws -> T
) async throws -> T {
    let ownCluster = cluster == nil ? try SidecarFixtures.makeCluster() : nil
    let kafka = cluster ?? ownCluster!
    defer { ownCluster?.shutdown() }
    let service = try await TestServiceSettings.make(.dpopVerifier, kafkaBrokers: kafka.bootstrapServers)
    // The loopback issuer answers in milliseconds, but a machine running the whole suite can stall a
    // fetch for seconds; a failed first fetch would answer the test's first request with 503.
    var overrides = overrides
    overrides.keyFetchTimeout = overrides.keyFetchTimeout ?? .seconds(30)
    let app = try buildApplication(
        settings: service, sidecar: settings, logger: TestServiceSettings.logger, overrides: overrides)
    return try await app.journaledTest(.live) { client in
        guard let port = client.port else { throw TestFailure("no port") }
        let sidecar = LiveSidecar(port: port, managementPort: service.managementPort)
        if waitUntilReady { try await sidecar.waitUntilReady() }
        return try await body(sidecar)
    }
}
