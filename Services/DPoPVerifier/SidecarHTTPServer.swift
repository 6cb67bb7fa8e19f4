import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Proxy mode's HTTP/1.1 server: Hummingbird's HTTP1 channel (same parser limits, codec and
/// connection-state handling) with a ``ProxyChannelHandler`` right after the parser, so proxied
/// requests are verified and forwarded inside the channel pipeline and only the sidecar's own
/// endpoints reach the router.
struct SidecarHTTPServer: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let route: ProxyRoute

    static func builder(route: ProxyRoute) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in SidecarHTTPServer(responder: responder, route: route) }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let defaults = HTTP1Channel.Configuration().httpDecoder
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = defaults.maxHeaderFieldSize
            limits.maxHeaderListSize = defaults.maxHeaderListSize
            limits.maxHeaderFieldCount = defaults.maxHeaderFieldCount
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            // The proxy handler reads NIO's request parts straight from the parser: only the sidecar's own
            // endpoints are converted to HTTP types and handed to Hummingbird's connection handling and router.
            try channel.pipeline.syncOperations.addHandler(ProxyChannelHandler(route: route))
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
