import Testing

/// Polls `condition` every 100 ms until it holds or `limit` passes; answers whether it held. The condition is
/// checked at least once, and once more at the deadline.
public func eventually(within limit: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// Like `eventually(within:_:)`, but a condition that does not hold within `limit` fails the test: it records
/// an issue naming `description` and throws `EventuallyTimeout`.
public func eventually(
    _ description: @autoclosure () -> String, within limit: Duration,
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    guard try await eventually(within: limit, condition) else {
        Issue.record("timed out waiting: \(description())", sourceLocation: sourceLocation)
        throw EventuallyTimeout(description: description())
    }
}

/// Thrown by `eventually(_:within:_:)` when its condition did not hold in time.
public struct EventuallyTimeout: Error, CustomStringConvertible {
    public let description: String
}
