import BenchmarkSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// What one load phase measured.
struct PhaseResult: Sendable {
    var completed = 0
    /// Responses by status code other than 200, and transport failures under 0.
    var failures: [Int: Int] = [:]
    var seconds: Double = 0
    /// Latency of each completed request in the measurement window, nanoseconds.
    var latencies: [Int64] = []
    /// When each latency's request was scheduled (ns since the phase start), for `--timeline`.
    var startedAt: [Int64] = []
    var exhausted = false

    var rate: Double { seconds > 0 ? Double(completed) / seconds : 0 }

    /// The latency at quantile `p` (0…1), microseconds; NaN without samples.
    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        return Percentiles(latencies.map { Double($0) / 1_000 }).at(p)
    }

    mutating func merge(_ other: PhaseResult) {
        completed += other.completed
        for (status, count) in other.failures { failures[status, default: 0] += count }
        latencies += other.latencies
        startedAt += other.startedAt
        exhausted = exhausted || other.exhausted
    }
}

/// HTTP/1.1 load over keep-alive connections: closed loop (each connection sends its next request
/// as soon as the previous answer is in: peak throughput) or open loop (requests scheduled at a
/// fixed rate; latency counted from the *scheduled* time, so a slow answer is not hidden by the
/// requests it delayed).
enum LoadGenerator {
    enum Mode: Sendable {
        case closed
        case open(perSecond: Double)
    }

    static func run(
        port: Int, connections: Int, seconds: Double, mode: Mode,
        next: @escaping @Sendable () -> HTTPRequestHead?
    ) async throws -> PhaseResult {
        let group = MultiThreadedEventLoopGroup.singleton
        let start = NIODeadline.now() + .milliseconds(50)
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        let results = try await withThrowingTaskGroup(of: PhaseResult.self) { tasks in
            for index in 0..<connections {
                let slot: (first: NIODeadline, interval: TimeAmount)?
                switch mode {
                case .closed:
                    slot = nil
                case .open(let perSecond):
                    let interval = Double(connections) / perSecond
                    slot = (
                        start + .nanoseconds(Int64(interval * 1e9 * Double(index) / Double(connections))),
                        .nanoseconds(Int64(interval * 1e9))
                    )
                }
                tasks.addTask {
                    let promise = group.any().makePromise(of: PhaseResult.self)
                    let driver = ConnectionDriver(start: start, end: end, slot: slot, next: next, done: promise)
                    _ = try await ClientBootstrap(group: group)
                        .channelOption(.socketOption(.tcp_nodelay), value: 1)
                        .channelInitializer { channel in
                            channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(driver) }
                        }
                        .connect(host: "127.0.0.1", port: port).get()
                    return try await promise.futureResult.get()
                }
            }
            var merged = PhaseResult()
            for try await result in tasks { merged.merge(result) }
            return merged
        }
        var total = results
        total.seconds = seconds
        return total
    }

    /// `scheduled_ms latency_us` per request, in schedule order: shows whether slow requests cluster.
    static func writeTimeline(_ result: PhaseResult, to path: String) throws {
        let lines = zip(result.startedAt, result.latencies).sorted { $0.0 < $1.0 }
            .map { "\(String(format: "%.3f", Double($0.0) / 1e6)) \($0.1 / 1_000)" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// Drives one connection; lives on its channel's event loop.
final class ConnectionDriver: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let start: NIODeadline
    private let end: NIODeadline
    private let slot: (first: NIODeadline, interval: TimeAmount)?
    private let next: @Sendable () -> HTTPRequestHead?
    private let done: EventLoopPromise<PhaseResult>
    private var result = PhaseResult()
    private var inFlightSince: NIODeadline?
    private var status = 0
    private var waiting: [NIODeadline] = []
    private var slotsOver = false
    private var finished = false
    private var context: ChannelHandlerContext?

    init(
        start: NIODeadline, end: NIODeadline, slot: (first: NIODeadline, interval: TimeAmount)?,
        next: @escaping @Sendable () -> HTTPRequestHead?, done: EventLoopPromise<PhaseResult>
    ) {
        self.start = start
        self.end = end
        self.slot = slot
        self.next = next
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        self.context = context
        if let slot {
            schedule(slot.first, every: slot.interval)
        } else {
            context.eventLoop.scheduleTask(deadline: start) { self.send(startedAt: .now()) }
        }
        context.fireChannelActive()
    }

    private func schedule(_ deadline: NIODeadline, every interval: TimeAmount) {
        guard deadline < end, let context else {
            slotsOver = true
            if inFlightSince == nil { finish() }
            return
        }
        context.eventLoop.scheduleTask(deadline: deadline) {
            if self.inFlightSince == nil { self.send(startedAt: deadline) } else { self.waiting.append(deadline) }
            self.schedule(deadline + interval, every: interval)
        }
    }

    private func send(startedAt: NIODeadline) {
        guard !finished, let context else { return }
        guard let head = next() else {
            result.exhausted = true
            finish()
            return
        }
        inFlightSince = startedAt
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
        case .body:
            break
        case .end:
            let now = NIODeadline.now()
            // Closed loop: answers after the end are not counted (the rate divides by the window).
            // Open loop: every request scheduled inside the window counts, however late its answer.
            if let since = inFlightSince, since >= start, slot != nil || now <= end {
                if status == 200 {
                    result.completed += 1
                    result.latencies.append((now - since).nanoseconds)
                    result.startedAt.append((since - start).nanoseconds)
                } else {
                    result.failures[status, default: 0] += 1
                }
            }
            inFlightSince = nil
            if slot == nil {
                if now < end { send(startedAt: now) } else { finish() }
            } else if !waiting.isEmpty {
                send(startedAt: waiting.removeFirst())
            } else if slotsOver {
                finish()
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        result.failures[0, default: 0] += 1
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        done.succeed(result)
        context?.close(promise: nil)
    }
}
