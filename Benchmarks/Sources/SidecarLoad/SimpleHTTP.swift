import NIOCore
import NIOHTTP1
import NIOPosix

/// One GET over a fresh connection (readiness polls, `/metrics`).
enum SimpleHTTP {
    static func get(port: Int, path: String) async throws -> (status: Int, body: String) {
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: (Int, String).self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.pipeline.addHTTPClientHandlers().flatMap {
                    channel.pipeline.addHandler(Collector(promise: promise))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        channel.write(
            HTTPClientRequestPart.head(
                HTTPRequestHead(
                    version: .http1_1, method: .GET, uri: path,
                    headers: [
                        "Host": "127.0.0.1", "Connection": "close",
                    ])), promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        let answer = try await promise.futureResult.get()
        try? await channel.close().get()
        return answer
    }

    final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<(Int, String)>
        var status = 0
        var body = ""
        init(promise: EventLoopPromise<(Int, String)>) { self.promise = promise }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = Int(head.status.code)
            case .body(let buffer): body += String(buffer: buffer)
            case .end: promise.succeed((status, body))
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(BenchmarkError("connection closed before the answer"))
        }
    }

    /// Polls until `path` answers 200.
    static func waitFor(port: Int, path: String, seconds: Double) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now < deadline {
            if let (status, _) = try? await get(port: port, path: path), status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchmarkError("127.0.0.1:\(port)\(path) did not answer 200 within \(seconds) s")
    }

    /// The value of an unlabelled Prometheus sample line `name value`.
    static func metric(_ text: String, _ name: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }
}
