/// Nearest-rank percentiles (the smallest sample at or above the fraction `q` of the sorted samples), the
/// one definition every benchmark reports with.
public struct Percentiles: Sendable {
    /// The samples, ascending.
    public let sorted: [Double]

    public init(_ samples: [Double]) { sorted = samples.sorted() }

    public init(sorted: [Double]) { self.sorted = sorted }

    public var count: Int { sorted.count }

    /// The sample at quantile `q` (0…1); 0 for no samples.
    public func at(_ q: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((Double(sorted.count) * q).rounded(.up))
        return sorted[Swift.min(sorted.count - 1, Swift.max(0, rank - 1))]
    }

    public var max: Double { sorted.last ?? 0 }

    /// `<prefix>_p50_ms`, `_p99_ms`, `_max_ms` and `_samples` of samples given in seconds.
    public func millisecondsJSON(_ prefix: String) -> [String: Any] {
        [
            "\(prefix)_p50_ms": at(0.5) * 1000, "\(prefix)_p99_ms": at(0.99) * 1000, "\(prefix)_max_ms": max * 1000,
            "\(prefix)_samples": count,
        ]
    }
}
