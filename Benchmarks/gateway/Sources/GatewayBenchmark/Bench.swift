import Foundation
import Logging

/// Environment knobs and small helpers of the benchmark.
enum Bench {
    static let environment = ProcessInfo.processInfo.environment
    static var logger: Logger {
        var logger = Logger(label: "gateway-bench")
        logger.logLevel = .error
        return logger
    }

    static func setting(_ name: String, _ fallback: Int) -> Int {
        environment[name].flatMap(Int.init) ?? fallback
    }

    static func required(_ name: String) throws -> String {
        guard let value = environment[name], !value.isEmpty else { throw BenchError("\(name) is required") }
        return value
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// p50 / p99 / max of a sample, in milliseconds.
struct Percentiles {
    var p50 = 0.0, p99 = 0.0, max = 0.0, count = 0

    init(seconds samples: [Double]) {
        guard !samples.isEmpty else { return }
        let sorted = samples.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.up)) - 1)] * 1000 }
        p50 = at(0.5)
        p99 = at(0.99)
        max = sorted[sorted.count - 1] * 1000
        count = sorted.count
    }

    func json(_ prefix: String) -> [String: Any] {
        ["\(prefix)_p50_ms": p50, "\(prefix)_p99_ms": p99, "\(prefix)_max_ms": max, "\(prefix)_samples": count]
    }
}
