import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// The HTTP/1.1 server of every Latchkey service: Hummingbird's HTTP1 channel (same parser limits,
/// codec, connection-state handling and router) with the connection guard around NIO's parser
/// (``HTTPConnectionGuard``, ``HTTPRequestCheck``): header and idle deadlines, RFC 9112's framing and
/// `Host` rules, and the server's own framed answer and close when a request breaks them.
/// `requestHandlers` sit between the guard and Hummingbird's codec, on NIO's request parts (the
/// sidecar's proxy).
public struct LatchkeyHTTPServer: ServerChildChannel, HTTPChannelHandler {
    public typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    public let responder: HTTPChannelHandler.Responder
    let settings: HTTPServerSettings
    let requestHandlers: @Sendable () -> [any ChannelHandler]

    public init(
        responder: @escaping HTTPChannelHandler.Responder, settings: HTTPServerSettings,
        requestHandlers: @escaping @Sendable () -> [any ChannelHandler] = { [] }
    ) {
        self.responder = responder
        self.settings = settings
        self.requestHandlers = requestHandlers
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let defaults = HTTP1Channel.Configuration().httpDecoder
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = defaults.maxHeaderFieldSize
            limits.maxHeaderListSize = defaults.maxHeaderListSize
            limits.maxHeaderFieldCount = defaults.maxHeaderFieldCount
            let operations = channel.pipeline.syncOperations
            let connection = HTTPConnectionGuard(settings: settings, logger: logger)
            try operations.addHandler(connection)
            try operations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try operations.addHandler(HTTPRequestCheck(connection: connection))
            try operations.addHandlers(requestHandlers())
            try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // Idle connections are the guard's business (it also sees requests the handlers above answer).
            try operations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try AcceptedConnection.wrap(channel)
        }
    }

    /// The connection's requests run on its event loop (``EventLoopTaskExecutor``).
    public func handle(value asyncChannel: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(asyncChannel.channel.eventLoop)) {
            await handleHTTP(asyncChannel: asyncChannel, logger: logger)
        }
    }
}

extension HTTPServerBuilder {
    /// The Latchkey HTTP/1.1 server (see ``LatchkeyHTTPServer``).
    public static func latchkey(
        _ settings: HTTPServerSettings, requestHandlers: @escaping @Sendable () -> [any ChannelHandler] = { [] }
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            LatchkeyHTTPServer(responder: responder, settings: settings, requestHandlers: requestHandlers)
        }
    }
}
