import HTTPTypes
import NIOCore
import NIOHTTP1

extension ProxyChannelHandler {
    /// The decisions of the proxied exchanges of one client connection, without a channel: the handler
    /// tells it what happened (a request part, the verification's outcome, an upstream connection, the
    /// upstream's response, a timer, a failure) and performs the action it answers.
    ///
    /// One exchange at a time: parts of pipelined requests wait in a queue until the previous answer is
    /// complete, so responses keep their order.
    ///
    /// Timeouts: total, from the decision to the upstream's response head; idle, the longest upstream
    /// silence. One watchdog per exchange checks both (scheduling and cancelling a NIO task is not free).
    struct StateMachine {
        enum Phase: Equatable {
            case idle
            /// Waiting for the token verification; the request body is buffered.
            case deciding
            /// Waiting for an upstream connection; the request body is buffered.
            case leasing
            /// The upstream has the request head; parts flow both ways.
            case forwarding
            /// The answer was given without the upstream (or the upstream's answer ended first); the rest
            /// of the request body is read and dropped.
            case discarding
            case closed
        }

        /// Buffered request body above which reading from the client pauses.
        static let bufferLimit = 256 * 1024

        private(set) var phase = Phase.idle
        /// Distinguishes exchanges, so a late asynchronous decision or timer of a finished one is ignored.
        private(set) var exchange = 0
        /// Set by HTTP/1.0 without keep-alive, `Connection: close` or a graceful shutdown: the answer says
        /// `Connection: close` and the connection closes after it.
        private(set) var closesConnectionAfterResponse = false
        private let totalTimeout: TimeAmount
        private let idleTimeout: TimeAmount

        /// Parts of pipelined requests that arrived before the current answer ended.
        private var queued = CircularBuffer<HTTPServerRequestPart>()
        private var readHeld = false

        // The current exchange.
        /// The client sent `Expect: 100-continue` and waits for our go-ahead before its body.
        private var expectsContinue = false
        private var requestEnded = false
        private var responseStarted = false
        private var responseEnded = false
        private var body: [ByteBuffer] = []
        private var bodyBytes = 0
        private var upstreamRequestEnded = false
        private var upstreamKeepAlive = false
        private var lastUpstreamActivity = NIODeadline.uptimeNanoseconds(0)
        /// Until the response head: the total timeout's deadline.
        private var totalDeadline = NIODeadline.uptimeNanoseconds(0)
        /// When the armed watchdog fires; `distantFuture` while none is armed.
        private var watchdogDeadline = NIODeadline.distantFuture

        init(totalTimeout: TimeAmount, idleTimeout: TimeAmount) {
            self.totalTimeout = totalTimeout
            self.idleTimeout = idleTimeout
        }

        // MARK: Client side

        enum PartAction: Equatable {
            case none
            /// A new request: verify it, then report ``decided(now:)`` or ``answered()``.
            case startExchange(HTTPRequestHead)
            case forwardBody(ByteBuffer)
            /// End the upstream request and flush.
            case forwardEnd
            /// Both sides ended: take the next request, or close the connection.
            case finishExchange(closeConnection: Bool)
        }

        /// A request part from the client.
        mutating func receivedPart(_ part: HTTPServerRequestPart, now: NIODeadline) -> PartAction {
            if !queued.isEmpty || !takesNextPart {
                queued.append(part)
                return .none
            }
            return handle(part, now: now)
        }

        /// After an exchange finished: the next queued part, as long as it can be handled now.
        mutating func nextQueuedPart(now: NIODeadline) -> PartAction? {
            guard takesNextPart, let part = queued.popFirst() else { return nil }
            return handle(part, now: now)
        }

        /// True when the next inbound part can be handled now: it belongs to the current request, or
        /// it starts a new one and the previous answer is complete.
        private var takesNextPart: Bool {
            switch phase {
            case .idle: true
            case .deciding, .leasing, .forwarding, .discarding: !requestEnded
            case .closed: false
            }
        }

        private mutating func handle(_ part: HTTPServerRequestPart, now: NIODeadline) -> PartAction {
            switch phase {
            case .idle:
                guard case .head(let head) = part else { return .none }  // stray parts of a refused request
                exchange &+= 1
                requestEnded = false
                responseStarted = false
                responseEnded = false
                upstreamRequestEnded = false
                closesConnectionAfterResponse = !head.isKeepAlive
                expectsContinue = head.headers.combined(.expect)?.lowercased() == "100-continue"
                phase = .deciding
                return .startExchange(head)
            case .closed:
                return .none
            case .deciding, .leasing, .forwarding, .discarding:
                return requestPart(part, now: now)
            }
        }

        private mutating func requestPart(_ part: HTTPServerRequestPart, now: NIODeadline) -> PartAction {
            switch part {
            case .head:
                return .none  // not possible before .end (the decoder frames requests)
            case .body(let buffer):
                switch phase {
                case .deciding, .leasing:
                    body.append(buffer)
                    bodyBytes += buffer.readableBytes
                    return .none
                case .forwarding:
                    // An upload in progress is activity too: the idle timeout is about a silent upstream.
                    lastUpstreamActivity = now
                    return .forwardBody(buffer)
                case .idle, .discarding, .closed:
                    return .none
                }
            case .end:
                requestEnded = true
                if phase == .forwarding {
                    // The response is still coming (its end moves the exchange on).
                    upstreamRequestEnded = true
                    return .forwardEnd
                }
                return finishIfDone().partAction
            }
        }

        enum ReadAction: Equatable {
            case read
            case hold
        }

        /// Backpressure towards the client: reads pause while pipelined requests wait, while a
        /// buffered body is large, and while the upstream cannot take more.
        mutating func read(upstreamWritable: Bool) -> ReadAction {
            guard holdsReads(upstreamWritable: upstreamWritable) else { return .read }
            readHeld = true
            return .hold
        }

        /// True when a held read may go out now.
        mutating func resumeReads(upstreamWritable: Bool) -> Bool {
            guard readHeld, !holdsReads(upstreamWritable: upstreamWritable) else { return false }
            readHeld = false
            return true
        }

        private func holdsReads(upstreamWritable: Bool) -> Bool {
            if !queued.isEmpty { return true }
            switch phase {
            case .deciding, .leasing: return bodyBytes > Self.bufferLimit
            case .forwarding: return !upstreamWritable
            case .closed: return true
            case .idle, .discarding: return false
            }
        }

        /// The client's read ended: what was forwarded goes out together.
        var flushesUpstream: Bool { phase == .forwarding }

        // MARK: Decision

        /// True while the verification of `exchange` is awaited (a late result for another is dropped).
        func awaitsDecision(of exchange: Int) -> Bool {
            exchange == self.exchange && phase == .deciding
        }

        enum DecidedAction: Equatable {
            /// Ask the pool for an upstream connection, after a `100 Continue` if the client waits for one.
            case lease(sendContinue: Bool, armWatchdogAt: NIODeadline)
        }

        /// The request is allowed.
        mutating func decided(now: NIODeadline) -> DecidedAction {
            phase = .leasing
            totalDeadline = now + totalTimeout
            lastUpstreamActivity = now
            watchdogDeadline = min(totalDeadline, now + idleTimeout)
            // `Expect` is not relayed (RFC 9110 §10.1.1 lets a proxy answer it): the body is welcome once the
            // request is allowed. A refused request gets its final answer instead, without reading a body.
            return .lease(sendContinue: expectsContinue && !requestEnded, armWatchdogAt: watchdogDeadline)
        }

        /// The handler wrote a whole answer of its own (a refusal, or 502/504).
        mutating func answered() -> Completion {
            responseStarted = true
            responseEnded = true
            phase = .discarding
            body.removeAll()
            bodyBytes = 0
            return finishIfDone()
        }

        enum Completion: Equatable {
            /// The request is still being read.
            case pending
            /// Both sides ended: take the next request, or close the connection.
            case finished(closeConnection: Bool)

            var partAction: PartAction {
                switch self {
                case .pending: .none
                case .finished(let closeConnection): .finishExchange(closeConnection: closeConnection)
                }
            }
        }

        private mutating func finishIfDone() -> Completion {
            guard requestEnded, responseEnded else { return .pending }
            body.removeAll()
            bodyBytes = 0
            exchange &+= 1
            watchdogDeadline = .distantFuture
            if closesConnectionAfterResponse {
                close()
                return .finished(closeConnection: true)
            }
            phase = .idle
            return .finished(closeConnection: false)
        }

        // MARK: Upstream

        enum LeasedAction: Equatable {
            /// Not needed (any more): back to the pool.
            case release
            /// Send the request head, then the buffered body (and the end, if it came).
            case forward(body: [ByteBuffer], end: Bool, rearmWatchdogAt: NIODeadline?)
        }

        mutating func leased(now: NIODeadline) -> LeasedAction {
            guard phase == .leasing else { return .release }
            phase = .forwarding
            lastUpstreamActivity = now
            // Normally the watchdog armed at the decision already fires within the idle timeout; after a long
            // wait for a connection it is set for the total timeout only, and the idle check must come sooner.
            let idleDeadline = now + idleTimeout
            var rearm: NIODeadline?
            if watchdogDeadline > idleDeadline {
                watchdogDeadline = min(totalDeadline, idleDeadline)
                rearm = watchdogDeadline
            }
            let buffered = body
            body.removeAll()
            bodyBytes = 0
            if requestEnded { upstreamRequestEnded = true }
            return .forward(body: buffered, end: requestEnded, rearmWatchdogAt: rearm)
        }

        enum GiveUpAction: Equatable {
            case none
            /// Answer 502 or 504 (then report ``answered()``).
            case answerWithError
            /// The response already started: only closing the connection tells the client.
            case closeConnection
        }

        mutating func leaseFailed() -> GiveUpAction {
            guard phase == .leasing else { return .none }
            return upstreamGaveUp()
        }

        /// The upstream failed or timed out.
        mutating func upstreamGaveUp() -> GiveUpAction {
            watchdogDeadline = .distantFuture
            guard !responseStarted else {
                close()
                return .closeConnection
            }
            return .answerWithError
        }

        mutating func upstreamResponseHead(keepAlive: Bool, now: NIODeadline) {
            lastUpstreamActivity = now
            upstreamKeepAlive = keepAlive
            responseStarted = true
        }

        mutating func upstreamResponseBody(now: NIODeadline) {
            lastUpstreamActivity = now
        }

        struct ResponseEnd: Equatable {
            /// The connection can carry the next request: keep-alive, and the whole request was sent.
            let reusable: Bool
            let completion: Completion
        }

        mutating func upstreamResponseEnded() -> ResponseEnd {
            responseEnded = true
            let reusable = upstreamKeepAlive && upstreamRequestEnded
            if !requestEnded { phase = .discarding }
            return ResponseEnd(reusable: reusable, completion: finishIfDone())
        }

        enum WatchdogAction: Equatable {
            /// The timer of an earlier exchange.
            case ignore
            /// Nothing left to watch.
            case none
            case timeOut
            case rearm(at: NIODeadline)
        }

        /// Checks both timeouts: the total one until the response head, the idle one (upstream silence)
        /// while forwarding; re-arms for whichever comes next.
        mutating func watchdogFired(exchange: Int, now: NIODeadline) -> WatchdogAction {
            guard exchange == self.exchange else { return .ignore }
            watchdogDeadline = .distantFuture
            let forwarding: Bool
            switch phase {
            case .leasing: forwarding = false
            case .forwarding: forwarding = true
            case .idle, .deciding, .discarding, .closed: return .none
            }
            let waitsForHead = !responseStarted
            let idleDeadline = lastUpstreamActivity + idleTimeout
            if (waitsForHead && now >= totalDeadline) || (forwarding && now >= idleDeadline) {
                return .timeOut
            }
            switch (waitsForHead, forwarding) {
            case (true, true): watchdogDeadline = min(totalDeadline, idleDeadline)
            case (true, false): watchdogDeadline = totalDeadline
            case (false, _): watchdogDeadline = idleDeadline
            }
            return .rearm(at: watchdogDeadline)
        }

        // MARK: Connection

        enum ErrorAction: Equatable {
            /// No exchange of ours: the handlers behind us see the error.
            case fireError
            case none
            /// The connection guard answered the malformed or stalled request and closes the connection
            /// itself (after its answer is out): only the exchange ends here.
            case abandonExchange
            case closeConnection
        }

        mutating func errorCaught(requestAborted: Bool) -> ErrorAction {
            switch phase {
            case .idle:
                return .fireError
            case .closed:
                return .none
            case .deciding, .leasing, .forwarding, .discarding:
                close()
                return requestAborted ? .abandonExchange : .closeConnection
            }
        }

        enum QuiesceAction: Equatable {
            /// No exchange of ours: the handlers behind us close the connection.
            case fireEvent
            /// The exchange in progress finishes first, then the connection closes.
            case closeAfterExchange
            case none
        }

        /// Graceful shutdown. Pipelined requests not yet started are dropped.
        mutating func quiesce() -> QuiesceAction {
            switch phase {
            case .idle:
                queued.removeAll()
                return .fireEvent
            case .closed:
                return .none
            case .deciding, .leasing, .forwarding, .discarding:
                queued.removeAll()
                closesConnectionAfterResponse = true
                return .closeAfterExchange
            }
        }

        mutating func channelInactive() {
            close()
        }

        private mutating func close() {
            phase = .closed
            watchdogDeadline = .distantFuture
            queued.removeAll()
        }
    }
}
