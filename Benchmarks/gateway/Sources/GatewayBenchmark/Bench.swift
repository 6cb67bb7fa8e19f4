import BenchmarkSupport
import Foundation
import Logging

extension Bench {
    static var logger: Logger { makeLogger("gateway-bench") }
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
