import Hummingbird
import HummingbirdCore
import LatchkeyServer
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1.1 server (its `HTTP1Channel` pipeline) for test upstreams and issuers, with accepted
/// connections wrapped like the services' (``AcceptedConnection``): a connection that arrives as the server
/// stops is closed, where Hummingbird's own wrapping would trap and end the whole test process.
struct TestHTTPServer: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let operations = channel.pipeline.syncOperations
            try operations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false)
            try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try operations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try AcceptedConnection.wrap(channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// ``TestHTTPServer``.
    static var test: HTTPServerBuilder { HTTPServerBuilder { TestHTTPServer(responder: $0) } }
}
