import LatchkeyPersistence
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// Checks the connections a pool keeps open (`pool_min`) with `SELECT 1` every `pool_keepalive`, in one round
/// for the whole pool: a connection that died without a word (a host lost with no TCP reset, a middlebox that
/// dropped it) is closed and replaced before a request is sent on it, and middleboxes see traffic on
/// connections that are otherwise idle.
///
/// PostgresNIO's own keep-alive does this with a timer per connection, set each time the connection goes back
/// to the pool and cancelled when it is leased again: under load one timer (a few tasks) per statement, and a
/// cancelled sleep stays in the executor's timer heap until its deadline. A round per interval costs the same
/// at any load, and a connection that does not answer is closed after ``answerTimeout`` instead of waiting for
/// the kernel to give up on it.
public struct ConnectionKeepAlive: Service, CustomStringConvertible {
    /// Far longer than `SELECT 1` takes on a live connection, even on a busy server.
    public static let defaultAnswerTimeout: Duration = .seconds(10)

    let client: PostgresClient
    let connections: Int
    let interval: Duration
    let answerTimeout: Duration
    let logger: Logger
    /// `latchkey_db_keepalive_closed_connections_total{pool}`: connections closed for not answering.
    let closedConnections: Counter

    /// The keep-alive of `client`, the pool named `pool` in logs and metrics (`app`, `system`); nil when
    /// `configuration` keeps no connection open or sends no check.
    public init?(
        client: PostgresClient, pool: String, configuration: DatabaseConfiguration,
        answerTimeout: Duration = defaultAnswerTimeout, metrics: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) {
        guard let interval = configuration.keepAliveInterval, configuration.minimumConnections > 0 else {
            return nil
        }
        self.client = client
        self.connections = configuration.minimumConnections
        self.interval = interval
        self.answerTimeout = answerTimeout
        var logger = logger
        logger[metadataKey: "pool"] = "\(pool)"
        self.logger = logger
        self.closedConnections = Counter(
            label: "latchkey_db_keepalive_closed_connections_total", dimensions: [("pool", pool)], factory: metrics)
    }

    public func run() async {
        await runPeriodically(
            every: interval, name: "PostgreSQL keep-alive", logger: logger, startingAfter: interval
        ) {
            _ = await checkConnections()
        }
    }

    /// One round: as many leases at once as the pool keeps connections, so each idle connection is taken by one
    /// of them (busy connections are answering anyway). Returns how many connections were closed.
    public func checkConnections() async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<connections {
                group.addTask {
                    // No connection to lease: the pool's own attempts to connect report why.
                    (try? await client.withConnection { await Self.closeUnlessAnswering($0, within: answerTimeout) })
                        ?? false
                }
            }
            var closed = 0
            for await wasClosed in group where wasClosed { closed += 1 }
            if closed > 0 {
                closedConnections.increment(by: closed)
                logger.warning(
                    "closed PostgreSQL connections that did not answer their keep-alive check",
                    metadata: ["connections": "\(closed)", "timeout": "\(answerTimeout)"])
            }
            return closed
        }
    }

    /// Sends `SELECT 1` on `connection` and closes it unless it answers within `timeout`; true when closed.
    static func closeUnlessAnswering(_ connection: PostgresConnection, within timeout: Duration) async -> Bool {
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await connection.query("SELECT 1", logger: connection.logger)) != nil }
            group.addTask { (try? await Task.sleep(for: timeout)) == nil }
            let first = await group.next() ?? false
            // Closing is also what ends a query that never answers.
            if !first { try? await connection.close() }
            group.cancelAll()
            return first
        }
        return !answered
    }

    public var description: String { "PostgreSQL keep-alive" }
}
