import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

/// Hears what a PostgreSQL notification channel carries, and tells which notifications the transactions
/// committed before a given moment sent. Notifications arrive in commit order, so once a barrier sent by
/// the probe itself is heard, everything committed before it has been heard too: no waiting on the clock.
public final class NotificationProbe: Sendable {
    public let channel: String
    private let client: PostgresClient
    private let logger: Logger
    private let received = Mutex<[String]>([])
    private let lastBarrier = Mutex<String?>(nil)

    public init(channel: String, client: PostgresClient, logger: Logger) {
        self.channel = channel
        self.client = client
        self.logger = logger
    }

    /// Listens on one connection of the client until cancelled.
    public func run() async throws {
        try await client.withConnection { connection in
            try await connection.listen(on: channel) { notifications in
                for try await notification in notifications {
                    received.withLock { $0.append(notification.payload) }
                }
            }
        }
    }

    /// The payloads of the notifications committed since the previous call (or since listening started, for
    /// the first call: call it once before what is to be observed).
    public func heardSinceLastCall(within limit: Duration = .seconds(60)) async throws -> [String] {
        let barrier = "probe-barrier-\(UUID().uuidString)"
        let previous = lastBarrier.withLock { $0 }
        // Until the probe listens, its barriers go unheard: send one again each time the wait polls.
        try await eventually("\(channel) barrier is heard", within: limit) {
            if received.withLock({ $0.contains(barrier) }) { return true }
            try await client.query("SELECT pg_notify(\(channel), \(barrier))", logger: logger)
            return false
        }
        lastBarrier.withLock { $0 = barrier }
        return received.withLock { payloads in
            let start = previous.flatMap { payloads.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
            let end = payloads.firstIndex(of: barrier) ?? payloads.endIndex
            return payloads[start..<end].filter { !$0.hasPrefix("probe-barrier-") }
        }
    }
}
