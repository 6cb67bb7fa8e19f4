import Foundation
import NIOCore
import NIOPosix

/// A TCP client that writes exactly the bytes it is given, when it is told to, and records what the
/// server answers and whether the server closed: for slow, pipelined and malformed requests no HTTP
/// client library would send. Tests poll it with generous deadlines (``waitFor``).
public final class RawClient: @unchecked Sendable {
    private let channel: any Channel
    private let recorder: Recorder

    private init(channel: any Channel, recorder: Recorder) {
        self.channel = channel
        self.recorder = recorder
    }

    public static func connect(port: Int) async throws -> RawClient {
        let recorder = Recorder()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in channel.pipeline.addHandler(recorder) }
            .connect(host: "127.0.0.1", port: port).get()
        return RawClient(channel: channel, recorder: recorder)
    }

    /// Writes `text`; false once the connection is closed (the server hung up on us).
    @discardableResult
    public func send(_ text: String) async -> Bool {
        do {
            try await channel.writeAndFlush(ByteBuffer(string: text))
            return true
        } catch {
            return false
        }
    }

    /// Everything received so far.
    public var received: String { recorder.snapshot.received }
    /// True once the server closed the connection (or reset it).
    public var isClosed: Bool { recorder.snapshot.closed }
    /// The status code of the first answer, when its status line has arrived.
    public var status: Int? {
        let text = received
        guard let line = text.split(separator: "\r\n", maxSplits: 1).first, text.contains("\r\n") else { return nil }
        let parts = line.split(separator: " ")
        return parts.count >= 2 && parts[0].hasPrefix("HTTP/1.") ? Int(parts[1]) : nil
    }

    /// Statuses of every answer received so far, in order.
    public var statuses: [Int] {
        received.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    /// Whether the first answer is framed: a `Content-Length` whose bytes all arrived.
    public var firstAnswerIsFramed: Bool {
        let text = received
        guard let headEnd = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<headEnd.lowerBound].lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return false }
        return text[headEnd.upperBound...].utf8.count >= length
    }

    public func close() {
        channel.close(promise: nil)
    }

    /// Polls until `condition` holds or `timeout` passes; answers whether it held.
    @discardableResult
    public func waitFor(_ timeout: Duration, _ condition: (RawClient) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition(self) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    private final class Recorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        private let lock = NSLock()
        private var text = ""
        private var closed = false

        var snapshot: (received: String, closed: Bool) { lock.withLock { (text, closed) } }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            lock.withLock { text += String(buffer: buffer) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            lock.withLock { closed = true }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
