/// Tuning of the outbox relay; the defaults suit one relay per service replica.
public struct OutboxRelayConfiguration: Sendable {
    /// Rows claimed per round trip.
    public var batchSize: Int = 200
    /// Shortest time between two claims while rows keep arriving. Under steady load a claim made as soon as the
    /// last one returned finds only the few rows committed meanwhile, and each claim costs a statement and a
    /// dozen task wake-ups however few rows it carries; spacing them gathers the rows into fewer, larger
    /// batches. The first claim after an idle spell and the claim after a full batch (a backlog) are not
    /// delayed, so a lone event is relayed at once and a backlog drains back to back.
    public var claimInterval: Duration = .milliseconds(20)
    /// Shortest wait before looking again at rows waiting out a retry backoff.
    public var retryPollInterval: Duration = .milliseconds(25)
    /// How long a claim protects rows from other relays; a crashed relay's rows return after this.
    public var leaseDuration: Duration = .seconds(120)
    /// First retry delay after a failed delivery; doubles per attempt up to `maximumBackoff`, with jitter.
    public var initialBackoff: Duration = .milliseconds(200)
    public var maximumBackoff: Duration = .seconds(30)
    /// Sent rows are deleted after this long.
    public var retention: Duration = .seconds(7 * 24 * 3600)
    /// How often backlog gauges are refreshed and old rows purged. Inserts wake the relay at once through
    /// PostgreSQL `NOTIFY`, so this is also the slow fallback poll: it finds rows whose claim lapsed (a
    /// relay that crashed) and anything inserted while the listening connection was being re-established.
    public var maintenanceInterval: Duration = .seconds(15)

    public init() {}
}
