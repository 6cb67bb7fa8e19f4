import NIOCore
import NIOHTTP1
import Testing

@testable import DPoPVerifier

/// The proxy handler's decisions without a channel: each row starts the state machine in a phase
/// (reached through events only), feeds it one event, and checks the action and the next phase.
@Suite struct ProxyChannelHandlerStateMachineTests {
    typealias Machine = ProxyChannelHandler.StateMachine

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    static let totalTimeout = TimeAmount.seconds(10)
    static let idleTimeout = TimeAmount.seconds(3)
    static let chunk = ByteBuffer(string: "chunk")

    static func head(_ headers: [(String, String)] = []) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/orders", headers: HTTPHeaders(headers))
    }

    static let plain = head()
    static let closing = head([("Connection", "close")])
    static let expecting = head([("Expect", "100-continue")])

    /// Where a row starts; every phase is reached the way a connection reaches it.
    enum Start: String, Sendable {
        case idle
        case deciding, decidingWithBody, decidingEnded, decidingEndedClosing, decidingExpecting, decidingExpectingEnded
        case leasing, leasingWithBodyEnded
        case forwarding, forwardingEnded
        /// The upstream's response head was relayed.
        case responding, respondingEnded, respondingEndedClosing, respondingEndedNotKeepAlive
        /// Refused; the request body is still coming.
        case discarding, discardingClosing
        case closed

        func machine() -> Machine {
            var machine = Machine(
                totalTimeout: ProxyChannelHandlerStateMachineTests.totalTimeout,
                idleTimeout: ProxyChannelHandlerStateMachineTests.idleTimeout)
            let t0 = ProxyChannelHandlerStateMachineTests.t0
            func receive(_ part: HTTPServerRequestPart) { _ = machine.receivedPart(part, now: t0) }
            func lease(_ head: HTTPRequestHead, body: Bool = false, end: Bool = false) {
                receive(.head(head))
                if body { receive(.body(chunk)) }
                if end { receive(.end(nil)) }
                _ = machine.decided(now: t0)
            }
            switch self {
            case .idle: break
            case .deciding: receive(.head(plain))
            case .decidingWithBody:
                receive(.head(plain))
                receive(.body(chunk))
            case .decidingEnded:
                receive(.head(plain))
                receive(.end(nil))
            case .decidingEndedClosing:
                receive(.head(closing))
                receive(.end(nil))
            case .decidingExpecting: receive(.head(expecting))
            case .decidingExpectingEnded:
                receive(.head(expecting))
                receive(.end(nil))
            case .leasing: lease(plain)
            case .leasingWithBodyEnded: lease(plain, body: true, end: true)
            case .forwarding:
                lease(plain)
                _ = machine.leased(now: t0)
            case .forwardingEnded:
                lease(plain, end: true)
                _ = machine.leased(now: t0)
            case .responding:
                lease(plain)
                _ = machine.leased(now: t0)
                machine.upstreamResponseHead(keepAlive: true, now: t0)
            case .respondingEnded, .respondingEndedClosing, .respondingEndedNotKeepAlive:
                lease(self == .respondingEndedClosing ? closing : plain, end: true)
                _ = machine.leased(now: t0)
                machine.upstreamResponseHead(keepAlive: self != .respondingEndedNotKeepAlive, now: t0)
            case .discarding:
                receive(.head(plain))
                _ = machine.answered()
            case .discardingClosing:
                receive(.head(closing))
                _ = machine.answered()
            case .closed: machine.channelInactive()
            }
            return machine
        }
    }

    enum Event: Sendable {
        case part(HTTPServerRequestPart)
        case decided
        case answered
        case leased
        case leaseFailed
        case upstreamGaveUp
        case responseHead
        case responseEnded
        /// The watchdog of the current exchange (or of the one before) fires `after` t0.
        case watchdog(after: TimeAmount, current: Bool = true)
        case error(aborted: Bool)
        case quiesce
        case inactive
        case read(upstreamWritable: Bool)
    }

    enum Outcome: Equatable, Sendable {
        case part(Machine.PartAction)
        case decided(Machine.DecidedAction)
        case completion(Machine.Completion)
        case leased(Machine.LeasedAction)
        case giveUp(Machine.GiveUpAction)
        case responseEnd(Machine.ResponseEnd)
        case watchdog(Machine.WatchdogAction)
        case error(Machine.ErrorAction)
        case quiesce(Machine.QuiesceAction)
        case read(Machine.ReadAction)
        /// Events that only update the machine.
        case nothing
    }

    static func apply(_ event: Event, to machine: inout Machine) -> Outcome {
        switch event {
        case .part(let part): return .part(machine.receivedPart(part, now: t0))
        case .decided: return .decided(machine.decided(now: t0))
        case .answered: return .completion(machine.answered())
        case .leased: return .leased(machine.leased(now: t0))
        case .leaseFailed: return .giveUp(machine.leaseFailed())
        case .upstreamGaveUp: return .giveUp(machine.upstreamGaveUp())
        case .responseHead:
            machine.upstreamResponseHead(keepAlive: true, now: t0)
            return .nothing
        case .responseEnded: return .responseEnd(machine.upstreamResponseEnded())
        case .watchdog(let after, let current):
            let exchange = machine.exchange - (current ? 0 : 1)
            return .watchdog(machine.watchdogFired(exchange: exchange, now: t0 + after))
        case .error(let aborted): return .error(machine.errorCaught(requestAborted: aborted))
        case .quiesce: return .quiesce(machine.quiesce())
        case .inactive:
            machine.channelInactive()
            return .nothing
        case .read(let writable): return .read(machine.read(upstreamWritable: writable))
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let start: Start
        let event: Event
        let outcome: Outcome
        let next: Machine.Phase
        var testDescription: String { "\(start) + \(event) → \(outcome), \(next)" }

        init(_ start: Start, _ event: Event, _ outcome: Outcome, _ next: Machine.Phase) {
            self.start = start
            self.event = event
            self.outcome = outcome
            self.next = next
        }
    }

    static let rows: [Row] = [
        // A new request starts an exchange; stray parts of a refused one are dropped.
        Row(.idle, .part(.head(plain)), .part(.startExchange(plain)), .deciding),
        Row(.idle, .part(.body(chunk)), .part(.none), .idle),
        Row(.idle, .part(.end(nil)), .part(.none), .idle),
        Row(.idle, .read(upstreamWritable: false), .read(.read), .idle),
        Row(.idle, .leased, .leased(.release), .idle),
        Row(.idle, .leaseFailed, .giveUp(.none), .idle),
        Row(.idle, .watchdog(after: .seconds(3)), .watchdog(.none), .idle),
        Row(.idle, .error(aborted: false), .error(.fireError), .idle),
        Row(.idle, .quiesce, .quiesce(.fireEvent), .idle),
        Row(.idle, .inactive, .nothing, .closed),

        // Verifying: the body is buffered, the answer decides.
        Row(.deciding, .part(.body(chunk)), .part(.none), .deciding),
        Row(.deciding, .part(.head(plain)), .part(.none), .deciding),
        Row(.deciding, .part(.end(nil)), .part(.none), .deciding),
        Row(.deciding, .decided, .decided(.lease(sendContinue: false, armWatchdogAt: t0 + idleTimeout)), .leasing),
        Row(
            .decidingExpecting, .decided, .decided(.lease(sendContinue: true, armWatchdogAt: t0 + idleTimeout)),
            .leasing),
        Row(
            .decidingExpectingEnded, .decided, .decided(.lease(sendContinue: false, armWatchdogAt: t0 + idleTimeout)),
            .leasing),
        Row(.deciding, .answered, .completion(.pending), .discarding),
        Row(.decidingEnded, .answered, .completion(.finished(closeConnection: false)), .idle),
        Row(.decidingEndedClosing, .answered, .completion(.finished(closeConnection: true)), .closed),
        Row(.deciding, .leased, .leased(.release), .deciding),
        Row(.deciding, .leaseFailed, .giveUp(.none), .deciding),
        Row(.deciding, .watchdog(after: .seconds(3)), .watchdog(.none), .deciding),
        Row(.deciding, .read(upstreamWritable: false), .read(.read), .deciding),
        Row(.deciding, .error(aborted: true), .error(.abandonExchange), .closed),
        Row(.deciding, .error(aborted: false), .error(.closeConnection), .closed),
        Row(.deciding, .quiesce, .quiesce(.closeAfterExchange), .deciding),
        Row(.deciding, .inactive, .nothing, .closed),

        // Waiting for an upstream connection.
        Row(.leasing, .part(.body(chunk)), .part(.none), .leasing),
        Row(.leasing, .part(.end(nil)), .part(.none), .leasing),
        Row(.leasing, .leased, .leased(.forward(body: [], end: false, rearmWatchdogAt: nil)), .forwarding),
        Row(
            .leasingWithBodyEnded, .leased, .leased(.forward(body: [chunk], end: true, rearmWatchdogAt: nil)),
            .forwarding),
        Row(.leasing, .leaseFailed, .giveUp(.answerWithError), .leasing),
        Row(.leasing, .answered, .completion(.pending), .discarding),
        Row(.leasing, .watchdog(after: .seconds(3)), .watchdog(.rearm(at: t0 + totalTimeout)), .leasing),
        Row(.leasing, .watchdog(after: .seconds(10)), .watchdog(.timeOut), .leasing),
        Row(.leasing, .watchdog(after: .seconds(10), current: false), .watchdog(.ignore), .leasing),
        Row(.leasing, .error(aborted: false), .error(.closeConnection), .closed),
        Row(.leasing, .quiesce, .quiesce(.closeAfterExchange), .leasing),
        Row(.leasing, .inactive, .nothing, .closed),

        // Forwarding before the response head: parts flow, failures are still answered.
        Row(.forwarding, .part(.body(chunk)), .part(.forwardBody(chunk)), .forwarding),
        Row(.forwarding, .part(.end(nil)), .part(.forwardEnd), .forwarding),
        Row(.forwarding, .responseHead, .nothing, .forwarding),
        Row(.forwarding, .read(upstreamWritable: true), .read(.read), .forwarding),
        Row(.forwarding, .read(upstreamWritable: false), .read(.hold), .forwarding),
        Row(.forwarding, .leased, .leased(.release), .forwarding),
        Row(.forwarding, .leaseFailed, .giveUp(.none), .forwarding),
        Row(.forwarding, .upstreamGaveUp, .giveUp(.answerWithError), .forwarding),
        Row(.forwardingEnded, .upstreamGaveUp, .giveUp(.answerWithError), .forwarding),
        Row(.forwarding, .watchdog(after: .seconds(2)), .watchdog(.rearm(at: t0 + idleTimeout)), .forwarding),
        Row(.forwarding, .watchdog(after: .seconds(3)), .watchdog(.timeOut), .forwarding),
        Row(.forwarding, .error(aborted: true), .error(.abandonExchange), .closed),
        Row(.forwarding, .quiesce, .quiesce(.closeAfterExchange), .forwarding),

        // After the response head: only the idle timeout applies, a failure can only close.
        Row(.responding, .watchdog(after: .seconds(2)), .watchdog(.rearm(at: t0 + idleTimeout)), .forwarding),
        Row(.responding, .watchdog(after: .seconds(3)), .watchdog(.timeOut), .forwarding),
        Row(.responding, .upstreamGaveUp, .giveUp(.closeConnection), .closed),
        Row(.responding, .responseEnded, .responseEnd(.init(reusable: false, completion: .pending)), .discarding),
        Row(
            .respondingEnded, .responseEnded,
            .responseEnd(.init(reusable: true, completion: .finished(closeConnection: false))), .idle),
        Row(
            .respondingEndedNotKeepAlive, .responseEnded,
            .responseEnd(.init(reusable: false, completion: .finished(closeConnection: false))), .idle),
        Row(
            .respondingEndedClosing, .responseEnded,
            .responseEnd(.init(reusable: true, completion: .finished(closeConnection: true))), .closed),
        Row(.respondingEnded, .error(aborted: false), .error(.closeConnection), .closed),

        // Answered without the upstream: the rest of the request is dropped, its end finishes the exchange.
        Row(.discarding, .part(.body(chunk)), .part(.none), .discarding),
        Row(.discarding, .part(.end(nil)), .part(.finishExchange(closeConnection: false)), .idle),
        Row(.discardingClosing, .part(.end(nil)), .part(.finishExchange(closeConnection: true)), .closed),
        Row(.discarding, .read(upstreamWritable: false), .read(.read), .discarding),
        Row(.discarding, .leased, .leased(.release), .discarding),
        Row(.discarding, .leaseFailed, .giveUp(.none), .discarding),
        Row(.discarding, .watchdog(after: .seconds(10)), .watchdog(.none), .discarding),
        Row(.discarding, .error(aborted: true), .error(.abandonExchange), .closed),
        Row(.discarding, .quiesce, .quiesce(.closeAfterExchange), .discarding),

        // Closed: nothing happens any more, reads stay off.
        Row(.closed, .part(.head(plain)), .part(.none), .closed),
        Row(.closed, .read(upstreamWritable: true), .read(.hold), .closed),
        Row(.closed, .leased, .leased(.release), .closed),
        Row(.closed, .leaseFailed, .giveUp(.none), .closed),
        Row(.closed, .watchdog(after: .seconds(10)), .watchdog(.none), .closed),
        Row(.closed, .error(aborted: false), .error(.none), .closed),
        Row(.closed, .quiesce, .quiesce(.none), .closed),
    ]

    @Test(arguments: rows) func transition(_ row: Row) {
        var machine = row.start.machine()
        #expect(Self.apply(row.event, to: &machine) == row.outcome)
        #expect(machine.phase == row.next)
    }

    @Test func pipelinedRequestsWaitForThePreviousAnswer() {
        var machine = Machine(totalTimeout: Self.totalTimeout, idleTimeout: Self.idleTimeout)
        let second = Self.head([("X-Second", "1")])
        #expect(machine.receivedPart(.head(Self.plain), now: Self.t0) == .startExchange(Self.plain))
        #expect(machine.receivedPart(.end(nil), now: Self.t0) == .none)
        #expect(machine.receivedPart(.head(second), now: Self.t0) == .none)
        #expect(machine.receivedPart(.end(nil), now: Self.t0) == .none)
        #expect(machine.read(upstreamWritable: true) == .hold, "a queued request holds reads")
        #expect(machine.nextQueuedPart(now: Self.t0) == nil, "the first answer is not complete")

        _ = machine.decided(now: Self.t0)
        _ = machine.leased(now: Self.t0)
        machine.upstreamResponseHead(keepAlive: true, now: Self.t0)
        #expect(machine.upstreamResponseEnded().completion == .finished(closeConnection: false))
        #expect(machine.nextQueuedPart(now: Self.t0) == .startExchange(second))
        #expect(machine.nextQueuedPart(now: Self.t0) == Machine.PartAction.none, "the end is taken")
        #expect(machine.nextQueuedPart(now: Self.t0) == nil)
        #expect(machine.phase == .deciding)
        #expect(machine.resumeReads(upstreamWritable: true) == true, "the queue is empty again")
    }

    @Test func gracefulShutdownLetsTheExchangeFinishThenCloses() {
        var machine = Start.deciding.machine()
        _ = machine.receivedPart(.end(nil), now: Self.t0)
        _ = machine.receivedPart(.head(Self.plain), now: Self.t0)
        #expect(!machine.closesConnectionAfterResponse)
        #expect(machine.quiesce() == .closeAfterExchange)
        #expect(machine.closesConnectionAfterResponse, "the answer says Connection: close")
        #expect(machine.answered() == .finished(closeConnection: true))
        #expect(machine.nextQueuedPart(now: Self.t0) == nil, "the pipelined request was dropped")
    }

    @Test func lateDecisionsAndTimersOfAnEarlierExchangeAreIgnored() {
        var machine = Start.decidingEnded.machine()
        let first = machine.exchange
        #expect(machine.awaitsDecision(of: first))
        #expect(!machine.awaitsDecision(of: first - 1))
        _ = machine.answered()
        #expect(!machine.awaitsDecision(of: first), "the exchange finished")
        #expect(machine.watchdogFired(exchange: first, now: Self.t0 + .seconds(10)) == .ignore)
        _ = machine.receivedPart(.head(Self.plain), now: Self.t0)
        #expect(!machine.awaitsDecision(of: first))
        #expect(machine.awaitsDecision(of: machine.exchange))
    }

    @Test func aLongWaitForAConnectionBringsTheIdleCheckForward() {
        var machine = Start.leasing.machine()
        #expect(
            machine.watchdogFired(exchange: machine.exchange, now: Self.t0 + .seconds(3))
                == .rearm(at: Self.t0 + Self.totalTimeout))
        #expect(
            machine.leased(now: Self.t0 + .seconds(5))
                == .forward(body: [], end: false, rearmWatchdogAt: Self.t0 + .seconds(8)))
        #expect(machine.watchdogFired(exchange: machine.exchange, now: Self.t0 + .seconds(8)) == .timeOut)
    }

    @Test func afterTheResponseHeadOnlySilenceTimesOut() {
        var machine = Start.responding.machine()
        machine.upstreamResponseBody(now: Self.t0 + .seconds(9))
        #expect(
            machine.watchdogFired(exchange: machine.exchange, now: Self.t0 + .seconds(10))
                == .rearm(at: Self.t0 + .seconds(12)))
        #expect(machine.watchdogFired(exchange: machine.exchange, now: Self.t0 + .seconds(12)) == .timeOut)
    }

    @Test func anUploadKeepsTheUpstreamFromTimingOut() {
        var machine = Start.forwarding.machine()
        #expect(machine.receivedPart(.body(Self.chunk), now: Self.t0 + .seconds(2)) == .forwardBody(Self.chunk))
        #expect(
            machine.watchdogFired(exchange: machine.exchange, now: Self.t0 + .seconds(3))
                == .rearm(at: Self.t0 + .seconds(5)))
    }

    @Test func aLargeBufferedBodyHoldsReadsUntilItIsForwarded() {
        var machine = Start.deciding.machine()
        var big = ByteBuffer(repeating: 0, count: Machine.bufferLimit)
        _ = machine.receivedPart(.body(big), now: Self.t0)
        #expect(machine.read(upstreamWritable: true) == .read, "at the limit")
        big = ByteBuffer(repeating: 0, count: 1)
        _ = machine.receivedPart(.body(big), now: Self.t0)
        #expect(machine.read(upstreamWritable: true) == .hold)
        _ = machine.decided(now: Self.t0)
        #expect(machine.resumeReads(upstreamWritable: true) == false, "still buffered while leasing")
        guard case .forward(let body, _, _) = machine.leased(now: Self.t0) else {
            Issue.record("not forwarded")
            return
        }
        #expect(body.map(\.readableBytes) == [Machine.bufferLimit, 1])
        #expect(machine.resumeReads(upstreamWritable: false) == false, "the upstream cannot take more")
        #expect(machine.resumeReads(upstreamWritable: true) == true)
        #expect(machine.resumeReads(upstreamWritable: true) == false, "no read is held any more")
    }

    @Test func onlyTheForwardingPhaseFlushesTheUpstream() {
        #expect(Start.forwarding.machine().flushesUpstream)
        #expect(Start.responding.machine().flushesUpstream)
        for start in [Start.idle, .deciding, .leasing, .discarding, .closed] {
            #expect(!start.machine().flushesUpstream, "\(start)")
        }
    }
}
