import Foundation
import Synchronization

/// A source of the current wall-clock time, injected so that time-dependent checks are testable.
public protocol WallClock: Sendable {
    func now() -> Date
}

/// The real system clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A manually driven clock for tests; safe to read and move from any task.
public final class FixedWallClock: WallClock {
    private let current: Mutex<Date>

    public init(_ date: Date) {
        current = Mutex(date)
    }

    /// Convenience for tests that think in Unix seconds.
    public convenience init(unixSeconds: Int64) {
        self.init(Date(timeIntervalSince1970: TimeInterval(unixSeconds)))
    }

    public func now() -> Date { current.withLock { $0 } }

    /// Replaces the current time.
    public func set(_ date: Date) { current.withLock { $0 = date } }

    /// Moves the clock forward (or backward, with a negative interval).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
