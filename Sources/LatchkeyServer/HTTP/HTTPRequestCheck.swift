import NIOCore
import NIOHTTP1

/// Right after NIO's HTTP/1.1 parser: reports every request and response part to the connection's
/// ``HTTPConnectionGuard``, passes on only requests that follow RFC 9112's rules (see
/// ``HTTPRequestHeadRules``), and turns parse errors into the guard's answer instead of letting them
/// reach the handlers (where they surfaced as 500s or a silent close).
final class HTTPRequestCheck: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: HTTPConnectionGuard

    init(connection: HTTPConnectionGuard) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let passes =
            switch unwrapInboundIn(data) {
            case .head(let head): connection.requestHead(head)
            case .body(let buffer): connection.requestBody(buffer.readableBytes)
            case .end: connection.requestEnd()
            }
        if passes { context.fireChannelRead(data) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? HTTPParserError {
            if connection.parserError(error) {
                context.fireErrorCaught(HTTPRequestAborted(reason: "malformed request body"))
            }
            return
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            switch connection.responseHead(&head) {
            case .drop: promise?.fail(ChannelError.outputClosed)
            case .unchanged: context.write(data, promise: promise)
            case .changed: context.write(wrapOutboundOut(.head(head)), promise: promise)
            }
        case .body:
            guard connection.writesResponses else {
                promise?.fail(ChannelError.outputClosed)
                return
            }
            context.write(data, promise: promise)
        case .end:
            guard connection.writesResponses else {
                promise?.fail(ChannelError.outputClosed)
                return
            }
            context.write(data, promise: promise)
            connection.responseEnded()
        }
    }
}
