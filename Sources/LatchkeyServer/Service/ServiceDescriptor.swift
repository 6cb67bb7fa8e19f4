/// What distinguishes one Latchkey executable at start-up: its name, default port and database needs.
public struct ServiceDescriptor: Sendable {
    public let name: String
    public let defaultPort: Int
    /// True when the service runs cross-tenant work (outbox relay, audit ingestion) and needs `DATABASE_SYSTEM_URL`.
    public let needsSystemDatabase: Bool

    public init(name: String, defaultPort: Int, needsSystemDatabase: Bool) {
        self.name = name
        self.defaultPort = defaultPort
        self.needsSystemDatabase = needsSystemDatabase
    }
}
