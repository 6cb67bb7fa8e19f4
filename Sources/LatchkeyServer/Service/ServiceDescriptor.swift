import Foundation

/// What distinguishes one Latchkey executable at start-up: its name, default port, database needs and
/// the bundle its OpenAPI document ships in.
public struct ServiceDescriptor: Sendable {
    public let name: String
    public let defaultPort: Int
    /// False for a service that keeps no state in PostgreSQL (the sidecar): it reads no `DATABASE_URL`,
    /// opens no pool and neither its start-up nor its readiness depends on the database or its schema.
    public let needsDatabase: Bool
    /// True when the service runs cross-tenant work (outbox relay, audit ingestion) and needs `DATABASE_SYSTEM_URL`.
    public let needsSystemDatabase: Bool
    /// The service target's resources (`OpenAPI/<name>.json`): each service bundles its own document.
    public let resources: Bundle
    /// True when the service only writes to Kafka through its outbox: while Kafka is away the outbox holds
    /// the events, so readiness reports Kafka as degraded instead of taking the service out of rotation.
    public let kafkaOutageDegrades: Bool

    public init(
        name: String, defaultPort: Int, needsDatabase: Bool = true, needsSystemDatabase: Bool, resources: Bundle,
        kafkaOutageDegrades: Bool = false
    ) {
        self.name = name
        self.defaultPort = defaultPort
        self.needsDatabase = needsDatabase
        self.needsSystemDatabase = needsSystemDatabase
        self.resources = resources
        self.kafkaOutageDegrades = kafkaOutageDegrades
    }
}
