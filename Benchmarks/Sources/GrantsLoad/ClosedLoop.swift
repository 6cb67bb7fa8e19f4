import BenchmarkSupport
import Foundation
import Synchronization

/// A closed-loop phase: `workers` tasks each send one request, wait for the answer, and send the next,
/// for `seconds` (or until a worker runs out of prepared input). Latency per request, errors counted.
struct ClosedLoop {
    struct Result: Sendable {
        let name: String
        let completed: Int
        let failed: Int
        let elapsed: Double
        /// Latencies in microseconds.
        let latencies: Percentiles

        var perSecond: Double { Double(completed) / elapsed }

        /// The latency at percentile `p` (0…100), microseconds.
        func percentile(_ p: Double) -> Double { latencies.at(p / 100) }
    }

    /// What one request did: nil when the worker has no more input, else whether it succeeded.
    typealias Step = @Sendable (_ worker: Int) async -> Bool?

    static func run(name: String, workers: Int, seconds: Double, step: @escaping Step) async -> Result {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1_000))
        let perWorker = await withTaskGroup(of: ([Double], Int).self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var latencies: [Double] = []
                    var failed = 0
                    latencies.reserveCapacity(16_384)
                    while ContinuousClock.now < deadline {
                        let began = ContinuousClock.now
                        guard let succeeded = await step(worker) else { break }
                        let took = ContinuousClock.now - began
                        if succeeded {
                            latencies.append(
                                Double(took.components.seconds) * 1e6 + Double(took.components.attoseconds) / 1e12)
                        } else {
                            failed += 1
                        }
                    }
                    return (latencies, failed)
                }
            }
            var all: [([Double], Int)] = []
            for await result in group { all.append(result) }
            return all
        }
        let elapsed = ContinuousClock.now - start
        let latencies = Percentiles(perWorker.flatMap(\.0))
        return Result(
            name: name, completed: latencies.count, failed: perWorker.map(\.1).reduce(0, +),
            elapsed: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            latencies: latencies)
    }
}

/// Per-worker input prepared before a phase; each worker takes from its own queue.
final class WorkerQueues<Element: Sendable>: Sendable {
    private let queues: Mutex<[[Element]]>

    init(_ items: [[Element]]) {
        queues = Mutex(items.map { Array($0.reversed()) })
    }

    func next(_ worker: Int) -> Element? {
        queues.withLock { $0[worker].popLast() }
    }
}
