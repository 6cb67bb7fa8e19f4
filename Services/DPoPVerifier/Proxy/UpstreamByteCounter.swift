import NIOCore

/// In front of an upstream connection's response decoder: counts the bytes handed to it, and hands each read's
/// last byte over on its own. A response that ends within a read, before its last byte, therefore ends while
/// fewer bytes have been handed over than were read: the upstream sent more than the response (a body on a
/// HEAD or 204 answer, a second response nobody asked for), and the connection must not carry another request.
final class UpstreamByteCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Bytes handed to the decoder so far, the part it is decoding right now included.
    private(set) var delivered: Int64 = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if buffer.readableBytes > 1, let front = buffer.readSlice(length: buffer.readableBytes - 1) {
            delivered += Int64(front.readableBytes)
            context.fireChannelRead(wrapInboundOut(front))
        }
        delivered += Int64(buffer.readableBytes)
        context.fireChannelRead(wrapInboundOut(buffer))
    }
}
