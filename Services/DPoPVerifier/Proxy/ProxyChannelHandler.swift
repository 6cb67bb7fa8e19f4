import Foundation
import HTTPTypes
import LatchkeyServer
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// What proxy mode needs on every connection (shared, immutable).
struct ProxyRoute: Sendable {
    let gate: RequestGate
    let resolver: OriginResolver
    let proxy: UpstreamProxy
    let pools: UpstreamPools
    let logger: Logger
}

/// Proxy mode's request path, in the server connection's channel pipeline (right after the
/// connection guard of ``LatchkeyHTTPServer``, before Hummingbird's codec): every request is
/// verified and forwarded right here on the event loop — no task hop when the access token is
/// cached — over a keep-alive connection of the loop's ``UpstreamPool``, with bodies streamed in
/// both directions under backpressure.
///
/// The handler does the channel work; what an event means for the exchange is decided by its
/// ``StateMachine``. Before the upstream's response head, a failed or timed-out upstream is answered with
/// 502 `upstream_unavailable` or 504 `upstream_timeout`; after it the client connection is closed.
final class ProxyChannelHandler: ChannelDuplexHandler, RemovableChannelHandler, RoundFlushable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let route: ProxyRoute
    private var state: StateMachine
    private var context: ChannelHandlerContext?
    private var pool: UpstreamPool?
    private var requestIDs = RequestIDGenerator()

    // The current exchange.
    private var request: HTTPRequestHead?
    private var target: RequestTarget?
    private var view: UpstreamProxy.ClientView?
    private var decision: RequestAuthenticator.Decision?
    private var framing = UpstreamProxy.BodyFraming.none
    private var requestID = ""
    private var started = NIODeadline.now()
    private var responseStatus = 0
    private var upstream: UpstreamConnection?
    private var watchdog: Scheduled<Void>?
    /// The client's address as `X-Forwarded-For` shows it, and whether it is a trusted proxy: fixed per connection.
    private var peerAddress: String?
    private var peerTrusted = false

    init(route: ProxyRoute) {
        self.route = route
        state = StateMachine(
            totalTimeout: .milliseconds(Int64(route.proxy.settings.timeoutMilliseconds)),
            idleTimeout: .milliseconds(Int64(route.proxy.settings.idleTimeoutMilliseconds)))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        pool = route.pools.pool(for: context.eventLoop)
        let peer = context.channel.remoteAddress
        peerAddress = peer?.ipAddress
        peerTrusted = route.resolver.isTrusted(peer)
    }

    // MARK: Client side

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        perform(state.receivedPart(unwrapInboundIn(data), now: .now()))
    }

    private func perform(_ action: StateMachine.PartAction) {
        switch action {
        case .none:
            break
        case .startExchange(let head):
            start(head)
        case .forwardBody(let buffer):
            upstream?.write(.body(.byteBuffer(buffer)))
        case .forwardEnd:
            upstream?.write(.end(nil))
            flushUpstream()
        case .finishExchange(let closeConnection):
            finish(closeConnection: closeConnection)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if state.flushesUpstream { flushUpstream() }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        switch state.read(upstreamWritable: upstreamCanTakeMore) {
        case .read: context.read()
        case .hold: break
        }
    }

    /// The forwarded request, at the end of the event loop's round.
    private func flushUpstream() {
        if let upstream { flushAtRoundEnd(upstream) }
    }

    /// The relayed answer, at the end of the event loop's round.
    private func flushClient() {
        flushAtRoundEnd(self)
    }

    /// Together with everything else the loop wrote in this round (``RoundFlusher``).
    private func flushAtRoundEnd(_ target: any RoundFlushable) {
        if let pool { pool.flusher.flushSoon(target) } else { target.flushWritten() }
    }

    private var upstreamCanTakeMore: Bool { upstream?.isWritable ?? true }

    private func resumeClientReads() {
        guard state.resumeReads(upstreamWritable: upstreamCanTakeMore), let context else { return }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { upstream?.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    /// Graceful shutdown: the connection-state handler behind us sees none of our exchanges, so one in
    /// progress finishes first and the connection closes after it.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch state.quiesce() {
        case .fireEvent: context.fireUserInboundEventTriggered(event)
        case .closeAfterExchange, .none: break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch state.errorCaught(requestAborted: error is HTTPRequestAborted) {
        case .fireError:
            context.fireErrorCaught(error)
        case .none:
            break
        case .abandonExchange:
            abandonExchange()
        case .closeConnection:
            abandonExchange()
            closeClient()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        state.channelInactive()
        abandonExchange()
        context.fireChannelInactive()
    }

    // MARK: One exchange

    private func start(_ head: HTTPRequestHead) {
        var rawTarget = head.uri
        var authority = head.headers.first(name: "host")
        if !rawTarget.hasPrefix("/"), let absolute = RequestTarget.absoluteForm(rawTarget) {
            rawTarget = absolute.target
            authority = absolute.authority
        }
        started = .now()
        request = head
        let incomingID = head.headers.combined(RequestIDs.headerName)
        requestID =
            incomingID.flatMap { RequestIDMiddleware<LatchkeyRequestContext>.isAcceptable($0) ? $0 : nil }
            ?? requestIDs.next()
        framing = .init(head.headers)

        guard let target = RequestTarget(rawTarget) else {
            route.gate.metrics.countRequest(outcome: "rejected", reason: "invalid_target")
            respond(OAuthError.invalidRequest("the request target must be an absolute path of RFC 3986 characters"))
            return
        }
        self.target = target
        let origin = route.resolver.origin(authority: authority, headers: head.headers, peerTrusted: peerTrusted)
        view = .init(origin: origin, peerAddress: peerAddress, peerTrusted: peerTrusted)
        do {
            if let decision = try route.gate.decideNow(
                method: head.method.rawValue, target: target, origin: origin,
                headers: head.headers)
            {
                decided(decision)
            } else {
                decideLater(method: head.method.rawValue, target: target, origin: origin, headers: head.headers)
            }
        } catch {
            respond(error)
        }
    }

    /// The token is not cached: verify it off the event loop, then continue here.
    private func decideLater(method: String, target: RequestTarget, origin: String, headers: HTTPHeaders) {
        guard let context else { return }
        let gate = route.gate
        let exchange = state.exchange
        let promise = context.eventLoop.makePromise(of: RequestAuthenticator.Decision.self)
        promise.completeWithTask {
            try await gate.decide(method: method, target: target, origin: origin, headers: headers)
        }
        promise.futureResult.assumeIsolated().whenComplete { result in
            guard self.state.awaitsDecision(of: exchange) else { return }
            switch result {
            case .success(let decision): self.decided(decision)
            case .failure(let error as OAuthError): self.respond(error)
            case .failure: self.respond(OAuthError(.internalServerError, "server_error", "internal error"))
            }
            self.resumeClientReads()
        }
    }

    private func decided(_ decision: RequestAuthenticator.Decision) {
        self.decision = decision
        guard case .lease(let sendContinue, let deadline) = state.decided(now: .now()), let context, let pool else {
            return
        }
        if sendContinue {
            context.writeAndFlush(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
        armWatchdog(at: deadline)
        pool.lease(for: self)
    }

    /// An answer of the sidecar's own, without the upstream.
    private func respond(_ error: OAuthError) {
        let (response, body) = error.jsonParts
        var headers = HTTPHeaders()
        for field in response.headerFields where field.name != RequestIDs.headerName {
            headers.add(name: field.name.rawName, value: field.value)
        }
        headers.add(name: RequestIDs.headerName.rawName, value: requestID)
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if state.closesConnectionAfterResponse { headers.add(name: "Connection", value: "close") }
        responseStatus = response.status.code
        guard let context else { return }
        let head = HTTPResponseHead(
            version: .http1_1, status: .init(statusCode: response.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        complete(state.answered())
    }

    /// The upstream failed or timed out.
    private func upstreamGaveUp(_ action: StateMachine.GiveUpAction, timedOut: Bool, error: (any Error)? = nil) {
        guard action != .none else { return }
        upstream?.abandon()
        upstream = nil
        cancelWatchdog()
        switch action {
        case .none:
            break
        case .closeConnection:
            abandonExchange()
            closeClient()
        case .answerWithError:
            let answer =
                timedOut
                ? OAuthError(.gatewayTimeout, "upstream_timeout", "the upstream did not answer in time")
                : OAuthError(.badGateway, "upstream_unavailable", "the upstream could not be reached")
            if !timedOut, let error {
                route.logger.warning("upstream request failed", metadata: ["error": "\(error)"])
            }
            route.gate.metrics.countRequest(outcome: "upstream_error", reason: answer.code)
            respond(answer)
        }
    }

    private func complete(_ completion: StateMachine.Completion) {
        if case .finished(let closeConnection) = completion { finish(closeConnection: closeConnection) }
    }

    /// Both sides of the exchange ended.
    private func finish(closeConnection: Bool) {
        guard let context else { return }
        if route.logger.logLevel <= .info { logAccess() }
        cancelWatchdog()
        request = nil
        target = nil
        view = nil
        decision = nil
        if closeConnection {
            abandonExchange()
            closeClient()
            return
        }
        while let action = state.nextQueuedPart(now: .now()) {
            perform(action)
        }
        resumeClientReads()
    }

    /// What was relayed may still wait for the round's flush: it goes out before the close.
    private func closeClient() {
        context?.flush()
        context?.close(promise: nil)
    }

    /// Drops what the exchange holds; the state machine already left it.
    private func abandonExchange() {
        cancelWatchdog()
        upstream?.abandon()
        upstream = nil
    }

    /// One line per proxied request at `info` (off in production and benchmarks: warning).
    private func logAccess() {
        var logger = route.logger
        logger[metadataKey: "request_id"] = .string(requestID)
        let micros = (NIODeadline.now() - started).nanoseconds / 1_000
        logger.info(
            "request",
            metadata: [
                "method": .string(request?.method.rawValue ?? ""), "path": .string(String(target?.path ?? "")),
                "status": .stringConvertible(responseStatus),
                "duration_ms": .string(String(format: "%.2f", Double(micros) / 1_000)),
            ])
    }

    // MARK: Watchdog

    private func armWatchdog(at deadline: NIODeadline) {
        guard let context else { return }
        let exchange = state.exchange
        watchdog = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.watchdogFired(exchange: exchange)
        }
    }

    private func watchdogFired(exchange: Int) {
        let action = state.watchdogFired(exchange: exchange, now: .now())
        guard action != .ignore else { return }
        watchdog = nil
        switch action {
        case .ignore, .none: break
        case .timeOut: upstreamGaveUp(state.upstreamGaveUp(), timedOut: true)
        case .rearm(let deadline): armWatchdog(at: deadline)
        }
    }

    private func cancelWatchdog() {
        watchdog?.cancel()
        watchdog = nil
    }
}

extension ProxyChannelHandler: UpstreamLeaseHolder {
    func leased(_ connection: UpstreamConnection) {
        guard let request, let target, let view,
            case .forward(let body, let end, let rearm) = state.leased(now: .now())
        else {
            pool?.release(connection, reusable: true)
            return
        }
        let identity: VerifiedIdentity? = if case .allowed(let identity) = decision { identity } else { nil }
        upstream = connection
        connection.delegate = self
        if let rearm {
            watchdog?.cancel()
            armWatchdog(at: rearm)
        }
        connection.write(
            .head(route.proxy.requestHead(request, target: target, identity: identity, view: view, framing: framing)))
        for buffer in body { connection.write(.body(.byteBuffer(buffer))) }
        if end { connection.write(.end(nil)) }
        flushUpstream()
        resumeClientReads()
    }

    func leaseFailed(_ error: any Error) {
        if let error = error as? ChannelError, case .connectTimeout = error {
            upstreamGaveUp(state.leaseFailed(), timedOut: true)
        } else {
            upstreamGaveUp(state.leaseFailed(), timedOut: false, error: error)
        }
    }
}

extension ProxyChannelHandler: UpstreamConnectionDelegate {
    var clientWritable: Bool { context?.channel.isWritable ?? false }

    func upstreamHead(_ head: HTTPResponseHead) {
        guard let context else { return }
        state.upstreamResponseHead(keepAlive: head.isKeepAlive, now: .now())
        var response = UpstreamProxy.responseHead(head)
        if let decision { route.gate.countAllowed(decision) }
        if let nonce = route.gate.nonce(forStatus: Int(head.status.code)) {
            response.headers.replaceOrAdd(name: Challenges.dpopNonce.rawName, value: nonce)
        }
        response.headers.replaceOrAdd(name: RequestIDs.headerName.rawName, value: requestID)
        if state.closesConnectionAfterResponse { response.headers.add(name: "Connection", value: "close") }
        responseStatus = Int(head.status.code)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
    }

    func upstreamBody(_ body: ByteBuffer) {
        state.upstreamResponseBody(now: .now())
        context?.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
    }

    func upstreamEnd() {
        guard let context, let upstream else { return }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        flushClient()
        let end = state.upstreamResponseEnded()
        self.upstream = nil
        pool?.release(upstream, reusable: end.reusable)
        complete(end.completion)
    }

    func upstreamReadComplete() {
        flushClient()
    }

    func flushWritten() {
        context?.flush()
    }

    func upstreamFailed(_ error: any Error) {
        upstream = nil
        upstreamGaveUp(state.upstreamGaveUp(), timedOut: false, error: error)
    }

    func upstreamWritable() {
        resumeClientReads()
    }
}
