import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix

/// An upstream for the timeout tests that answers from its event loop, never from Swift's cooperative
/// pool: with the whole suite running, an async route handler can wait seconds for a thread, and a late
/// response head would turn an idle-timeout case into a total-timeout one.
///
/// `GET /slow/MS`: nothing for MS ms, then `slow`. `GET /stall/MS`: head and `first;` at once, silence
/// for MS ms, then `second`. `GET /trickle/MS`: a `.` every 200 ms for MS ms, never silent for long.
/// Anything else: 404.
enum TimedUpstream {
    /// Runs `body` with the port of a fresh upstream, closed afterwards.
    static func run<T: Sendable>(_ body: @Sendable (_ port: Int) async throws -> T) async throws -> T {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw TestFailure("the timed upstream did not bind") }
        do {
            let result = try await body(port)
            try await channel.close()
            return result
        } catch {
            try? await channel.close()
            throw error
        }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private var target = ""

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): target = head.uri
            case .body: break
            case .end: answer(context: context)
            }
        }

        private func answer(context: ChannelHandlerContext) {
            let parts = target.split(separator: "/")
            guard parts.count == 2, let milliseconds = Int64(parts[1]) else {
                return send(.notFound, "", context: context)
            }
            let pause = TimeAmount.milliseconds(milliseconds)
            let loop = context.eventLoop.assumeIsolated()
            switch parts[0] {
            case "slow":
                loop.scheduleTask(in: pause) { self.send(.ok, "slow", context: context) }
            case "stall":
                startChunked(context: context)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "first;")))), promise: nil)
                loop.scheduleTask(in: pause) {
                    guard context.channel.isActive else { return }
                    context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "second")))), promise: nil)
                    context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                }
            case "trickle":
                startChunked(context: context)
                trickle(remaining: max(1, milliseconds / 200), context: context)
            default:
                send(.notFound, "", context: context)
            }
        }

        private func startChunked(context: ChannelHandlerContext) {
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
        }

        private func trickle(remaining: Int64, context: ChannelHandlerContext) {
            guard context.channel.isActive else { return }
            guard remaining > 0 else { return context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: ".")))), promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(200)) {
                self.trickle(remaining: remaining - 1, context: context)
            }
        }

        private func send(_ status: HTTPResponseStatus, _ text: String, context: ChannelHandlerContext) {
            guard context.channel.isActive else { return }
            let head = HTTPResponseHead(
                version: .http1_1, status: status, headers: ["Content-Length": String(text.utf8.count)])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
