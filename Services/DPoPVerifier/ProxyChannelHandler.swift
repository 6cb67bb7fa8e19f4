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
    /// Paths answered by the sidecar's router instead of being proxied. None: health, metrics and the
    /// OpenAPI document are served on the management port, so every path of the API stays reachable.
    let ownPaths: Set<Substring>

    static let ownPaths: Set<Substring> = []
}

/// Proxy mode's request path, in the server connection's channel pipeline (right after the
/// connection guard of ``LatchkeyHTTPServer``, before Hummingbird's codec): every request that is not one of the sidecar's own endpoints is
/// verified and forwarded right here on the event loop — no task hop when the access token is
/// cached — over a keep-alive connection of the loop's ``UpstreamPool``, with bodies streamed in
/// both directions under backpressure. The sidecar's own endpoints pass through to the router.
///
/// One request is handled at a time per connection; pipelined requests wait (and reads pause)
/// until the previous answer is complete, so responses keep their order.
///
/// Timeouts: connect (the pool's bootstrap); total, from the decision to the upstream's response
/// head; idle, the longest upstream silence. Before the response head they answer 502
/// `upstream_unavailable` or 504 `upstream_timeout`; after it the client connection is closed.
final class ProxyChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Phase {
        case idle
        /// The router answers (own endpoints); inbound parts are passed on until both sides ended.
        case passThrough(requestEnded: Bool, responseEnded: Bool)
        /// Waiting for the asynchronous token verification; the request body is buffered.
        case deciding
        /// Waiting for an upstream connection; the request body is buffered.
        case leasing
        /// The upstream has the request head; parts flow both ways.
        case forwarding
        /// The answer was given without the upstream (or the upstream gave up); the rest of the
        /// request body is read and dropped.
        case discarding
        case closed
    }

    /// Buffered request body above which reading from the client pauses.
    static let bufferLimit = 256 * 1024

    private let route: ProxyRoute
    private var context: ChannelHandlerContext?
    private var pool: UpstreamPool?
    private var phase = Phase.idle
    /// Parts of pipelined requests that arrived before the current answer ended.
    private var queued = CircularBuffer<HTTPServerRequestPart>()
    private var readHeld = false
    /// Distinguishes exchanges, so a late asynchronous decision for a finished one is ignored.
    private var generation = 0
    private var requestIDs = RequestIDGenerator()

    // The current exchange.
    private var request: HTTPRequestHead?
    private var target: RequestTarget?
    private var view: UpstreamProxy.ClientView?
    private var decision: RequestAuthenticator.Decision?
    private var framing = UpstreamProxy.BodyFraming.none
    private var requestID = ""
    private var started = NIODeadline.now()
    private var closeAfterResponse = false
    /// The client sent `Expect: 100-continue` and waits for our go-ahead before its body.
    private var expectsContinue = false
    private var requestEnded = false
    private var responseStarted = false
    private var responseEnded = false
    private var responseStatus = 0
    private var body: [ByteBuffer] = []
    private var bodyBytes = 0
    private var upstream: UpstreamConnection?
    private var upstreamRequestEnded = false
    private var upstreamKeepAlive = false
    private var lastUpstreamActivity = NIODeadline.now()
    /// Until the response head: the total timeout's deadline.
    private var totalDeadline = NIODeadline.now()
    /// One timer per exchange for both timeouts (scheduling and cancelling a NIO task is not free).
    private var watchdog: Scheduled<Void>?
    private var watchdogDeadline = NIODeadline.distantFuture
    /// The client's address as `X-Forwarded-For` shows it, and whether it is a trusted proxy: fixed per connection.
    private var peerAddress: String?
    private var peerTrusted = false

    init(route: ProxyRoute) {
        self.route = route
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
        let part = unwrapInboundIn(data)
        if !queued.isEmpty || !takesNextPart {
            queued.append(part)
            return
        }
        handle(part, context: context)
    }

    /// True when the next inbound part can be handled now: it belongs to the current request, or
    /// it starts a new one and the previous answer is complete.
    private var takesNextPart: Bool {
        switch phase {
        case .idle: return true
        case .passThrough(let requestEnded, _): return !requestEnded
        case .deciding, .leasing, .forwarding, .discarding: return !requestEnded
        case .closed: return false
        }
    }

    private func handle(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch phase {
        case .idle:
            guard case .head(let head) = part else { return }  // stray parts of a refused request
            start(head, context: context)
        case .passThrough(_, let responseEnded):
            context.fireChannelRead(wrapInboundOut(part))
            if case .end = part {
                phase = .passThrough(requestEnded: true, responseEnded: responseEnded)
                if responseEnded { finishPassThrough(context: context) }
            }
        case .closed:
            return
        case .deciding, .leasing, .forwarding, .discarding:
            requestBody(part)
        }
    }

    private func requestBody(_ part: HTTPServerRequestPart) {
        switch part {
        case .head:
            return  // not possible before .end (the decoder frames requests)
        case .body(let buffer):
            switch phase {
            case .deciding, .leasing:
                body.append(buffer)
                bodyBytes += buffer.readableBytes
            case .forwarding:
                // An upload in progress is activity too: the idle timeout is about a silent upstream.
                lastUpstreamActivity = .now()
                upstream?.write(.body(.byteBuffer(buffer)))
            default:
                break
            }
        case .end:
            requestEnded = true
            if case .forwarding = phase {
                upstream?.write(.end(nil))
                upstream?.flush()
                upstreamRequestEnded = true
            }
            finishIfDone()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .forwarding = phase { upstream?.flush() }
        context.fireChannelReadComplete()
    }

    /// Outbound: parts the router writes for a passed-through request.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if case .passThrough(let requestEnded, _) = phase, case .end = unwrapOutboundIn(data) {
            phase = .passThrough(requestEnded: requestEnded, responseEnded: true)
            if requestEnded { finishPassThrough(context: context) }
        }
    }

    /// Backpressure towards the client: reads pause while pipelined requests wait, while a
    /// buffered body is large, and while the upstream cannot take more.
    func read(context: ChannelHandlerContext) {
        if holdsClientReads {
            readHeld = true
        } else {
            context.read()
        }
    }

    private var holdsClientReads: Bool {
        if !queued.isEmpty { return true }
        switch phase {
        case .deciding, .leasing: return bodyBytes > Self.bufferLimit
        case .forwarding: return !(upstream?.isWritable ?? true)
        case .closed: return true
        default: return false
        }
    }

    private func resumeClientReads() {
        guard readHeld, !holdsClientReads, let context else { return }
        readHeld = false
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { upstream?.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    /// Graceful shutdown: the connection-state handler behind us only sees the router's exchanges, so
    /// a proxied exchange in progress finishes first and the connection closes after it.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch phase {
        case .idle, .passThrough:
            queued.removeAll()
            context.fireUserInboundEventTriggered(event)
        case .closed:
            return
        case .deciding, .leasing, .forwarding, .discarding:
            queued.removeAll()
            closeAfterResponse = true
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch phase {
        case .idle, .passThrough:
            context.fireErrorCaught(error)  // the router's exchange ends with it
        case .closed:
            return
        default:
            if error is HTTPRequestAborted {
                // The connection guard answered the malformed or stalled request and closes the
                // connection itself (after its answer is out): only this exchange ends here.
                abandonExchange()
            } else {
                closeConnection(context: context)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closed
        cancelTimers()
        upstream?.abandon()
        upstream = nil
        queued.removeAll()
        context.fireChannelInactive()
    }

    // MARK: One exchange

    private func start(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        var rawTarget = head.uri
        var authority = head.headers.first(name: "host")
        if !rawTarget.hasPrefix("/"), let absolute = RequestTarget.absoluteForm(rawTarget) {
            rawTarget = absolute.target
            authority = absolute.authority
        }
        let path = rawTarget.firstIndex(of: "?").map { rawTarget[..<$0] } ?? rawTarget[...]
        if route.ownPaths.contains(path) {
            phase = .passThrough(requestEnded: false, responseEnded: false)
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        generation &+= 1
        started = .now()
        request = head
        requestEnded = false
        responseStarted = false
        responseEnded = false
        upstreamRequestEnded = false
        // HTTP/1.0 without keep-alive, or `Connection: close`.
        closeAfterResponse = !head.isKeepAlive
        expectsContinue = head.headers.combined(.expect)?.lowercased() == "100-continue"
        let incomingID = head.headers.combined(RequestIDs.headerName)
        requestID = incomingID.flatMap { RequestIDMiddleware<LatchkeyRequestContext>.isAcceptable($0) ? $0 : nil }
            ?? requestIDs.next()
        framing = .init(head.headers)
        phase = .discarding  // until decided

        guard let target = RequestTarget(rawTarget) else {
            route.gate.metrics.countRequest(outcome: "rejected", reason: "invalid_target")
            respond(OAuthError.invalidRequest("the request target must be an absolute path of RFC 3986 characters"))
            return
        }
        self.target = target
        let origin = route.resolver.origin(authority: authority, headers: head.headers, peerTrusted: peerTrusted)
        view = .init(origin: origin, peerAddress: peerAddress, peerTrusted: peerTrusted)
        do {
            if let decision = try route.gate.decideNow(method: head.method.rawValue, target: target, origin: origin,
                                                      headers: head.headers) {
                decided(decision)
            } else {
                decideLater(method: head.method.rawValue, target: target, origin: origin, headers: head.headers,
                            context: context)
            }
        } catch {
            respond(error)
        }
    }

    /// The token is not cached: verify it off the event loop, then continue here.
    private func decideLater(method: String, target: RequestTarget, origin: String, headers: HTTPHeaders,
                             context: ChannelHandlerContext) {
        phase = .deciding
        let gate = route.gate
        let generation = self.generation
        let promise = context.eventLoop.makePromise(of: RequestAuthenticator.Decision.self)
        promise.completeWithTask {
            try await gate.decide(method: method, target: target, origin: origin, headers: headers)
        }
        promise.futureResult.assumeIsolated().whenComplete { result in
            guard self.generation == generation, case .deciding = self.phase else { return }
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
        phase = .leasing
        guard let context, let pool else { return }
        // `Expect` is not relayed (RFC 9110 §10.1.1 lets a proxy answer it): the body is welcome once the
        // request is allowed. A refused request gets its final answer instead, without reading a body.
        if expectsContinue, !requestEnded {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
        let now = NIODeadline.now()
        totalDeadline = now + .milliseconds(Int64(route.proxy.settings.timeoutMilliseconds))
        lastUpstreamActivity = now
        armWatchdog(at: min(totalDeadline, now + idleTimeout))
        pool.lease(for: self)
    }

    private func respond(_ error: OAuthError) {
        let (response, body) = error.jsonParts
        var headers = HTTPHeaders()
        for field in response.headerFields where field.name != RequestIDs.headerName {
            headers.add(name: field.name.rawName, value: field.value)
        }
        headers.add(name: RequestIDs.headerName.rawName, value: requestID)
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if closeAfterResponse { headers.add(name: "Connection", value: "close") }
        responseStatus = response.status.code
        guard let context else { return }
        let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: response.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        responseStarted = true
        responseEnded = true
        phase = .discarding
        self.body.removeAll()
        bodyBytes = 0
        finishIfDone()
    }

    /// The upstream failed or timed out: 502/504 before the response head, a closed connection after it.
    private func upstreamGaveUp(timedOut: Bool, error: (any Error)? = nil) {
        upstream?.abandon()
        upstream = nil
        cancelTimers()
        guard !responseStarted else {
            if let context { closeConnection(context: context) }
            return
        }
        let answer = timedOut
            ? OAuthError(.gatewayTimeout, "upstream_timeout", "the upstream did not answer in time")
            : OAuthError(.badGateway, "upstream_unavailable", "the upstream could not be reached")
        if !timedOut, let error {
            route.logger.warning("upstream request failed", metadata: ["error": "\(error)"])
        }
        route.gate.metrics.countRequest(outcome: "upstream_error", reason: answer.code)
        respond(answer)
    }

    private func finishIfDone() {
        guard requestEnded, responseEnded, let context else { return }
        if route.logger.logLevel <= .info { logAccess() }
        cancelTimers()
        request = nil
        target = nil
        view = nil
        decision = nil
        body.removeAll()
        bodyBytes = 0
        generation &+= 1
        if closeAfterResponse {
            closeConnection(context: context)
            return
        }
        phase = .idle
        drainQueue(context: context)
    }

    private func finishPassThrough(context: ChannelHandlerContext) {
        phase = .idle
        drainQueue(context: context)
    }

    private func drainQueue(context: ChannelHandlerContext) {
        while takesNextPart, let part = queued.popFirst() {
            handle(part, context: context)
        }
        resumeClientReads()
    }

    private func closeConnection(context: ChannelHandlerContext) {
        abandonExchange()
        context.close(promise: nil)
    }

    private func abandonExchange() {
        phase = .closed
        cancelTimers()
        upstream?.abandon()
        upstream = nil
        queued.removeAll()
    }

    private func cancelTimers() {
        watchdog?.cancel()
        watchdog = nil
        watchdogDeadline = .distantFuture
    }

    /// One line per proxied request at `info` (off in production and benchmarks: warning).
    private func logAccess() {
        var logger = route.logger
        logger[metadataKey: "request_id"] = .string(requestID)
        let micros = (NIODeadline.now() - started).nanoseconds / 1_000
        logger.info("request", metadata: [
            "method": .string(request?.method.rawValue ?? ""), "path": .string(String(target?.path ?? "")),
            "status": .stringConvertible(responseStatus), "duration_ms": .string(String(format: "%.2f", Double(micros) / 1_000)),
        ])
    }

    private var idleTimeout: TimeAmount { .milliseconds(Int64(route.proxy.settings.idleTimeoutMilliseconds)) }

    /// Checks both timeouts at `deadline`: the total one until the response head, the idle one (upstream
    /// silence) while forwarding; re-arms for whichever comes next.
    private func armWatchdog(at deadline: NIODeadline) {
        guard let context else { return }
        let generation = self.generation
        watchdogDeadline = deadline
        watchdog = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            guard self.generation == generation else { return }
            self.watchdog = nil
            self.watchdogDeadline = .distantFuture
            self.watchdogFired()
        }
    }

    private func watchdogFired() {
        let now = NIODeadline.now()
        let forwarding: Bool
        switch phase {
        case .leasing: forwarding = false
        case .forwarding: forwarding = true
        default: return
        }
        let waitsForHead = !responseStarted
        let idleDeadline = lastUpstreamActivity + idleTimeout
        if (waitsForHead && now >= totalDeadline) || (forwarding && now >= idleDeadline) {
            upstreamGaveUp(timedOut: true)
            return
        }
        switch (waitsForHead, forwarding) {
        case (true, true): armWatchdog(at: min(totalDeadline, idleDeadline))
        case (true, false): armWatchdog(at: totalDeadline)
        case (false, _): armWatchdog(at: idleDeadline)
        }
    }
}

extension ProxyChannelHandler: UpstreamLeaseHolder {
    func leased(_ connection: UpstreamConnection) {
        guard case .leasing = phase, let request, let target, let view else {
            pool?.release(connection, reusable: true)
            return
        }
        let identity: VerifiedIdentity? = if case .allowed(let identity) = decision { identity } else { nil }
        upstream = connection
        connection.delegate = self
        phase = .forwarding
        lastUpstreamActivity = .now()
        // Normally the watchdog armed at the decision already fires within the idle timeout; after a long
        // wait for a connection it is set for the total timeout only, and the idle check must come sooner.
        let idleDeadline = lastUpstreamActivity + idleTimeout
        if watchdogDeadline > idleDeadline {
            watchdog?.cancel()
            armWatchdog(at: min(totalDeadline, idleDeadline))
        }
        connection.write(.head(route.proxy.requestHead(request, target: target, identity: identity, view: view, framing: framing)))
        for buffer in body { connection.write(.body(.byteBuffer(buffer))) }
        body.removeAll()
        bodyBytes = 0
        if requestEnded {
            connection.write(.end(nil))
            upstreamRequestEnded = true
        }
        connection.flush()
        resumeClientReads()
    }

    func leaseFailed(_ error: any Error) {
        guard case .leasing = phase else { return }
        if let error = error as? ChannelError, case .connectTimeout = error {
            upstreamGaveUp(timedOut: true)
        } else {
            upstreamGaveUp(timedOut: false, error: error)
        }
    }
}

extension ProxyChannelHandler: UpstreamConnectionDelegate {
    var clientWritable: Bool { context?.channel.isWritable ?? false }

    func upstreamHead(_ head: HTTPResponseHead) {
        guard let context else { return }
        lastUpstreamActivity = .now()
        upstreamKeepAlive = head.isKeepAlive
        var response = UpstreamProxy.responseHead(head)
        if let decision { route.gate.countAllowed(decision) }
        if let nonce = route.gate.nonce(forStatus: Int(head.status.code)) {
            response.headers.replaceOrAdd(name: Challenges.dpopNonce.rawName, value: nonce)
        }
        response.headers.replaceOrAdd(name: RequestIDs.headerName.rawName, value: requestID)
        if closeAfterResponse { response.headers.add(name: "Connection", value: "close") }
        responseStatus = Int(head.status.code)
        responseStarted = true
        context.write(wrapOutboundOut(.head(response)), promise: nil)
    }

    func upstreamBody(_ body: ByteBuffer) {
        lastUpstreamActivity = .now()
        context?.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
    }

    func upstreamEnd() {
        guard let context, let upstream else { return }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        responseEnded = true
        self.upstream = nil
        pool?.release(upstream, reusable: upstreamKeepAlive && upstreamRequestEnded)
        if !requestEnded { phase = .discarding }
        finishIfDone()
    }

    func upstreamReadComplete() {
        context?.flush()
    }

    func upstreamFailed(_ error: any Error) {
        upstream = nil
        upstreamGaveUp(timedOut: false, error: error)
    }

    func upstreamWritable() {
        resumeClientReads()
    }
}
