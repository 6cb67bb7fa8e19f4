import Foundation
import LatchkeyCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// The trivial API behind the sidecar ("ok" for every request) and the issuer the sidecar trusts
/// (RFC 8414 discovery + JWKS for tenant `bench`), in the load generator's process.
///
/// A bare SwiftNIO server (no framework, no task hops): it shares CPU 1 with the load generator,
/// so it must cost as little as possible per request, or the direct phases would measure it.
struct BenchUpstream {
    static let tenant = "bench"
    let issuerKey: SigningKey
    let kid = "bench-1"
    let port: Int

    var issuer: String { "http://127.0.0.1:\(port)/t/\(Self.tenant)" }

    /// Starts listening; close the returned channel to stop.
    func start() async throws -> any Channel {
        let jwks = try JSONEncoder().encode(JWKSet(keys: [issuerKey.publicJWK(kid: kid)]))
        let discovery = try JSONSerialization.data(withJSONObject: ["issuer": issuer, "jwks_uri": issuer + "/jwks"])
        let documents: [String: ByteBuffer] = [
            "/.well-known/oauth-authorization-server/t/\(Self.tenant)": ByteBuffer(bytes: discovery),
            "/t/\(Self.tenant)/jwks": ByteBuffer(bytes: jwks),
        ]
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(UpstreamHandler(documents: documents))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }
}

/// Answers "ok" (or one of the issuer documents) once a request has been read whole.
final class UpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let ok = ByteBuffer(string: "ok")
    private let documents: [String: ByteBuffer]
    private var uri = ""
    private var keepAlive = true

    init(documents: [String: ByteBuffer]) {
        self.documents = documents
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            uri = head.uri
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            let document = documents[uri]
            let body = document ?? Self.ok
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: document == nil ? "text/plain" : "application/json")
            headers.add(name: "Content-Length", value: String(body.readableBytes))
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil
            )
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keepAlive = self.keepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
        }
    }
}

extension BenchUpstream {
    /// An access token (RFC 9068) for `jkt`, valid for an hour.
    func token(jkt: String, audience: String) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": issuer, "sub": "bench-user", "aud": audience, "exp": now + 3_600, "iat": now,
            "jti": UUID().uuidString,
            "client_id": "bench-client", "scope": "bench", "cnf": ["jkt": jkt],
        ]
        let payload = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return try CompactJWS.sign(
            payload: payload, using: issuerKey, header: JWSHeaderParameters(typ: "at+jwt", kid: kid))
    }
}
