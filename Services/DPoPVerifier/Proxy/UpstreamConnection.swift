import NIOCore
import NIOHTTP1

/// Receives what an upstream connection delivers for the request it currently carries.
protocol UpstreamConnectionDelegate: AnyObject {
    func upstreamHead(_ head: HTTPResponseHead)
    func upstreamBody(_ body: ByteBuffer)
    func upstreamEnd()
    /// End of one socket read: time to flush what was relayed.
    func upstreamReadComplete()
    /// The connection closed or failed before the response ended.
    func upstreamFailed(_ error: any Error)
    func upstreamWritable()
    /// False while the client cannot take more response bytes (the connection then stops reading).
    var clientWritable: Bool { get }
}

/// One keep-alive HTTP/1.1 connection to the upstream: the last handler of its pipeline,
/// confined to its event loop, leased by an ``UpstreamPool`` to one request at a time.
///
/// Reusable only while the upstream has sent nothing beyond the responses asked for: any byte after a
/// response's end (counted by the ``UpstreamByteCounter`` in front of the decoder) would otherwise become
/// the start of the next request's response.
final class UpstreamConnection: ChannelDuplexHandler, RoundFlushable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The request being carried; nil while idle in the pool.
    weak var delegate: (any UpstreamConnectionDelegate)?
    /// Told when the connection closes, so it leaves the pool.
    weak var pool: UpstreamPool?
    private let counter: UpstreamByteCounter
    /// Bytes the decoder had been given when the last response ended.
    private var deliveredAtResponseEnd: Int64 = 0
    private var context: ChannelHandlerContext?
    private var readHeld = false
    private(set) var isOpen = true

    init(counter: UpstreamByteCounter) {
        self.counter = counter
    }

    /// Open, and nothing arrived after the last response ended.
    var isReusable: Bool { isOpen && counter.delivered == deliveredAtResponseEnd }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let delegate else {
            // Nothing was asked: an idle connection that talks is not safe to reuse.
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head): delegate.upstreamHead(head)
        case .body(let body): delegate.upstreamBody(body)
        case .end:
            deliveredAtResponseEnd = counter.delivered
            delegate.upstreamEnd()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard let delegate else {
            // Bytes after the last response that decode to nothing whole yet (part of a head) come to light only here.
            if counter.delivered != deliveredAtResponseEnd { context.close(promise: nil) }
            context.fireChannelReadComplete()
            return
        }
        delegate.upstreamReadComplete()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isOpen = false
        let delegate = self.delegate
        self.delegate = nil
        pool?.closed(self)
        delegate?.upstreamFailed(ChannelError.eof)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let delegate = self.delegate
        self.delegate = nil
        context.close(promise: nil)
        delegate?.upstreamFailed(error)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { delegate?.upstreamWritable() }
        context.fireChannelWritabilityChanged()
    }

    /// Backpressure: no more response bytes are read while the client is not writable.
    func read(context: ChannelHandlerContext) {
        if let delegate, !delegate.clientWritable {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// Resumes reading once the client drained (see `read`).
    func resumeReading() {
        guard readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    var isWritable: Bool { context?.channel.isWritable ?? false }

    func write(_ part: HTTPClientRequestPart) {
        context?.write(wrapOutboundOut(part), promise: nil)
    }

    func flushWritten() {
        context?.flush()
    }

    /// Closes without telling the current delegate (it gave the connection up).
    func abandon() {
        delegate = nil
        context?.close(promise: nil)
    }
}
