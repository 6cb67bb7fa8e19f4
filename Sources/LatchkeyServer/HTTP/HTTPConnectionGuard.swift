import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1

/// The connection side of every Latchkey HTTP/1.1 server, first in the pipeline (before NIO's parser):
/// deadlines for clients the server waits on, the end of connections that cannot go on, and the
/// server's own answers to requests it refuses before any handler sees them. ``HTTPRequestCheck``,
/// right after the parser, reports each request and response part here.
///
/// Deadlines (one timer per connection, re-armed only when it fires or a deadline comes sooner):
/// - a request head must be complete `headerTimeout` after its first bytes arrive (408, then close);
/// - a client the server waits for (between requests, or inside a request body) may stay silent for
///   `idleTimeout` (close; 408 when the request has no answer yet);
/// - after an answer that came before the whole request body, the rest must arrive within
///   `headerTimeout` and ``drainLimit`` bytes, or the connection closes (a refused upload is never
///   read forever). While reads are paused for backpressure the server is the one waiting, so no
///   deadline is enforced then.
///
/// Closing: once output is shut after the last answer, input is read and dropped until the client
/// closes or ``lingerTimeout`` passes, so unread request bytes do not turn the close into a reset
/// that could destroy the answer.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The most of a request body read and dropped after the answer to keep the connection open.
    static let drainLimit = 64 * 1024
    static let lingerTimeout = TimeAmount.seconds(2)

    private enum Input {
        case betweenRequests
        /// Bytes of a request head arrived; the parser has not completed it.
        case head(since: NIODeadline)
        /// The head was passed on; its body has not ended.
        case body
        /// The request was answered before its body ended; the rest is read and passed on.
        case draining(since: NIODeadline, budget: Int)
        /// Nothing more is read or passed on.
        case closed
    }

    /// What happens to a response head from the handlers.
    enum ResponseHeadAction {
        case drop, unchanged, changed
    }

    private let headerTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var input = Input.betweenRequests
    /// Request heads passed on, and final answers completed: equal when nothing waits for an answer.
    private var passed = 0
    private var answered = 0
    private var responseOpen = false
    /// The connection closes once `answered` reaches this.
    private var closeAfter = Int.max
    /// A refusal that waits until earlier requests are answered.
    private var deferredRefusal: HTTPRequestHeadRules.Refusal?
    /// The guard answered itself: later answers from the handlers are dropped.
    private var answeredByGuard = false
    private var lingering = false
    private var readRequested = false
    /// The latest read from the client, or the end of the latest answer: where silence is counted from.
    private var lastActivity = NIODeadline.now()

    // The latest request passed on.
    private var bodyRemaining: Int?
    private var bodyRead = 0
    private var expectsContinue = false
    private var keepAliveHTTP10 = false
    private var deferredHeadOnly = false

    private var watchdog: Scheduled<Void>?
    private var watchdogAt = NIODeadline.distantFuture

    init(settings: HTTPServerSettings, logger: Logger) {
        headerTimeout = settings.headerTimeout
        idleTimeout = settings.idleTimeout
        self.logger = logger
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let now = NIODeadline.now()
        lastActivity = now
        arm(at: now + idleTimeout)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelWatchdog()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = NIODeadline.now()
        lastActivity = now
        switch input {
        case .closed:
            return  // refused or closing: the parser sees nothing more
        case .betweenRequests:
            input = .head(since: now)
            if passed == answered { arm(at: now + headerTimeout) }
        default:
            break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readRequested = false
        if lingering {
            context.read()  // drain until the client's end of stream
            return
        }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        readRequested = true
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if lingering, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A request whose body was still coming must not look complete to the handlers.
        switch input {
        case .body, .draining: context.fireErrorCaught(HTTPRequestAborted(reason: "the connection closed"))
        default: break
        }
        input = .closed
        cancelWatchdog()
        context.fireChannelInactive()
    }

    // MARK: Reports from HTTPRequestCheck

    /// A parsed request head: true when it may be passed on.
    func requestHead(_ head: HTTPRequestHead) -> Bool {
        switch input {
        case .head, .betweenRequests:  // the latter when the head came in the same read as the previous end
            break
        case .body, .draining, .closed:
            input = .closed
            return false
        }
        guard closeAfter == .max else {
            input = .closed  // no request after one that ends the connection (RFC 9112 §9.6)
            return false
        }
        switch HTTPRequestHeadRules.check(head) {
        case .failure(let refusal):
            input = .closed
            logger.debug(
                "request refused", metadata: ["status": "\(refusal.status.code)", "reason": "\(refusal.description)"])
            let headOnly = head.method == .HEAD
            if passed == answered, !responseOpen {
                answer(refusal, headOnly: headOnly)
            } else {
                deferredRefusal = refusal
                deferredHeadOnly = headOnly
                closeAfter = passed
            }
            return false
        case .success(let framing):
            passed += 1
            input = .body
            bodyRemaining = framing.contentLength
            bodyRead = 0
            expectsContinue = framing.expectsContinue
            keepAliveHTTP10 = head.version.minor == 0 && !framing.closesConnection
            if framing.closesConnection { closeAfter = passed }
            arm(at: lastActivity + idleTimeout)
            return true
        }
    }

    /// A part of the current request's body: true when it may be passed on.
    func requestBody(_ count: Int) -> Bool {
        switch input {
        case .body:
            bodyRead += count
            if let remaining = bodyRemaining { bodyRemaining = remaining - count }
            return true
        case .draining(let since, let budget):
            guard budget >= count else {
                giveUp("the rest of an answered request body is too large")
                return false
            }
            input = .draining(since: since, budget: budget - count)
            return true
        default:
            return false
        }
    }

    /// The end of the current request: true when it may be passed on.
    func requestEnd() -> Bool {
        switch input {
        case .body, .draining:
            input = .betweenRequests
            if passed == answered { arm(at: lastActivity + idleTimeout) }
            return true
        default:
            return false
        }
    }

    /// A response head from the handlers: dropped after the guard's own answer; may get a `Connection` field.
    func responseHead(_ head: inout HTTPResponseHead) -> ResponseHeadAction {
        guard !answeredByGuard, !lingering else { return .drop }
        let status = head.status.code
        if status >= 100, status < 200, status != 101 { return .unchanged }  // informational: a final head follows
        responseOpen = true
        let forLatest = answered + 1 == passed
        if forLatest, case .body = input {
            // Answered before its body was read: too much left, or a body the client holds back until
            // `100 Continue`, means the connection cannot be reused (RFC 9110 §10.1.1).
            let holdsBack = expectsContinue && bodyRead == 0 && (bodyRemaining ?? 1) > 0
            if (bodyRemaining ?? 0) > Self.drainLimit || holdsBack { closeAfter = passed }
        }
        if closeAfter == answered + 1 {
            if head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) {
                return .unchanged
            }
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            return .changed
        }
        if forLatest, keepAliveHTTP10, !head.headers.contains(name: "connection") {
            head.headers.add(name: "Connection", value: "keep-alive")
            return .changed
        }
        return .unchanged
    }

    /// Whether the end of a response from the handlers may be written.
    var writesResponses: Bool { !answeredByGuard && !lingering }

    /// After the end of a final response was written.
    func responseEnded() {
        guard responseOpen else { return }
        responseOpen = false
        answered += 1
        let now = NIODeadline.now()
        if answered >= closeAfter {
            if answered == passed, let refusal = deferredRefusal {
                answer(refusal, headOnly: deferredHeadOnly)
                return
            }
            if case .body = input {
                // Called while a handler writes: it learns of the abort once its write returned.
                let context = self.context
                context?.eventLoop.assumeIsolated().execute {
                    context?.fireErrorCaught(HTTPRequestAborted(reason: "the connection closes after the answer"))
                }
            }
            input = .closed
            lingeringClose()
            return
        }
        guard answered == passed else { return }
        switch input {
        case .body:
            input = .draining(since: now, budget: Self.drainLimit)
            arm(at: now + headerTimeout)
        case .head:
            // Reads may have been paused while the answer was pending: the head's time starts now.
            input = .head(since: now)
            arm(at: now + headerTimeout)
        case .betweenRequests:
            lastActivity = now
            arm(at: now + idleTimeout)
        case .draining, .closed:
            break
        }
    }

    /// A parse error of NIO's decoder: true when the request passed on must be aborted downstream.
    func parserError(_ error: HTTPParserError) -> Bool {
        let midRequest: Bool
        let draining: Bool
        switch input {
        case .closed: return false
        case .body:
            midRequest = true
            draining = false
        case .draining:
            midRequest = true
            draining = true
        case .betweenRequests, .head:
            midRequest = false
            draining = false
        }
        input = .closed
        if !midRequest, closeAfter != .max {
            return false  // bytes after a request that ends the connection: never read (the parser refuses them)
        }
        logger.debug("malformed request", metadata: ["error": "\(error)"])
        let refusal: HTTPRequestHeadRules.Refusal =
            if case .headerOverflow = error {
                .init(
                    status: .requestHeaderFieldsTooLarge, code: "request_header_fields_too_large",
                    description: "the request head is too large")
            } else {
                .init(status: .badRequest, code: "invalid_request", description: "the request is not valid HTTP/1.1")
            }
        let unanswered = passed - answered
        if midRequest {
            // The handlers drop the request; answers still owed to earlier requests are given up too.
            if !draining, !responseOpen, unanswered == 1 {
                answer(refusal, headOnly: false)
            } else {
                lingeringClose()
            }
            return true
        }
        if unanswered == 0, !responseOpen {
            answer(refusal, headOnly: false)
        } else {
            deferredRefusal = refusal
            deferredHeadOnly = false
            closeAfter = passed
        }
        return false
    }

    // MARK: Answers and closing

    /// Writes the guard's own answer (raw bytes: NIO's encoder frames no body for CONNECT), then closes.
    private func answer(_ refusal: HTTPRequestHeadRules.Refusal, headOnly: Bool) {
        guard let context, !answeredByGuard, !lingering else { return }
        answeredByGuard = true
        let (head, body) = OAuthError(
            HTTPResponse.Status(code: Int(refusal.status.code)), refusal.code, refusal.description
        ).jsonParts
        var buffer = context.channel.allocator.buffer(capacity: 256 + body.readableBytes)
        buffer.writeString("HTTP/1.1 \(refusal.status.code) \(refusal.status.reasonPhrase)\r\n")
        for field in head.headerFields { buffer.writeString("\(field.name.rawName): \(field.value)\r\n") }
        buffer.writeString("Content-Length: \(body.readableBytes)\r\nConnection: close\r\n\r\n")
        if !headOnly { buffer.writeImmutableBuffer(body) }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        input = .closed
        lingeringClose()
    }

    /// Shuts output once pending writes are out, then drops input until the client closes or the linger time passes.
    private func lingeringClose() {
        guard let context, !lingering else { return }
        lingering = true
        input = .closed
        context.flush()
        context.close(mode: .output, promise: nil)
        cancelWatchdog()
        arm(at: .now() + Self.lingerTimeout)
        context.read()
    }

    /// Ends a connection whose client broke a rule mid-request.
    private func giveUp(_ reason: String) {
        logger.debug("connection closed", metadata: ["reason": "\(reason)"])
        let midRequest: Bool =
            switch input {
            case .body, .draining: true
            default: false
            }
        input = .closed
        if midRequest { abortDownstream(reason) }
        lingeringClose()
    }

    /// Tells the handlers behind ``HTTPRequestCheck`` that the request they are reading is gone, so
    /// none of them takes a body cut short for a complete one.
    private func abortDownstream(_ reason: String) {
        context?.fireErrorCaught(HTTPRequestAborted(reason: reason))
    }

    // MARK: Deadlines

    /// Makes sure the timer fires no later than `deadline`.
    private func arm(at deadline: NIODeadline) {
        guard deadline < watchdogAt, let context else { return }
        watchdog?.cancel()
        watchdogAt = deadline
        watchdog = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.watchdog = nil
            self.watchdogAt = .distantFuture
            self.deadlineReached()
        }
    }

    private func cancelWatchdog() {
        watchdog?.cancel()
        watchdog = nil
        watchdogAt = .distantFuture
    }

    /// The current deadline, if the server is waiting on the client.
    private var deadline: NIODeadline? {
        if lingering { return nil }
        let waitsForAnswers = passed != answered || responseOpen
        switch input {
        case .closed: return nil
        case .head(let since): return waitsForAnswers ? nil : since + headerTimeout
        case .body: return lastActivity + idleTimeout
        case .draining(let since, _): return since + headerTimeout
        case .betweenRequests: return waitsForAnswers ? nil : lastActivity + idleTimeout
        }
    }

    private func deadlineReached() {
        guard let context else { return }
        let now = NIODeadline.now()
        if lingering {
            context.close(promise: nil)
            return
        }
        guard let deadline else { return }
        guard now >= deadline else {
            arm(at: deadline)
            return
        }
        if !readRequested {
            // Reads are paused by a handler (backpressure): the client may have sent what we did not read.
            switch input {
            case .head: input = .head(since: now)
            case .draining(_, let budget): input = .draining(since: now, budget: budget)
            default: lastActivity = now
            }
            arm(at: now + headerTimeout)
            return
        }
        switch input {
        case .head:
            logger.debug("connection closed", metadata: ["reason": "request head not complete in time"])
            answer(
                .init(
                    status: .requestTimeout, code: "request_timeout",
                    description:
                        "the request head was not complete within \(headerTimeout.nanoseconds / 1_000_000_000) s"),
                headOnly: false)
        case .body:
            logger.debug("connection closed", metadata: ["reason": "request body stalled"])
            input = .closed
            abortDownstream("the request body stalled")
            if passed - answered == 1, !responseOpen {
                answer(
                    .init(status: .requestTimeout, code: "request_timeout", description: "the request body stalled"),
                    headOnly: false)
            } else {
                lingeringClose()
            }
        case .draining:
            giveUp("the rest of an answered request body did not arrive in time")
        case .betweenRequests:
            logger.trace("idle connection closed")
            input = .closed
            context.close(promise: nil)
        case .closed:
            break
        }
    }
}

/// Sent down the pipeline when the connection guard gives up on a request whose head was passed on:
/// handlers drop the request instead of treating a body cut short as complete.
public struct HTTPRequestAborted: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "request aborted: \(reason)" }
}
