import Foundation
import Logging
import PostgresNIO

/// Where a database stands against the bundled migrations, for `latchkey migrate status`: read only,
/// so it runs with any role that may read `latchkey_schema_migrations` (every role may).
public struct MigrationStatus: Sendable, Equatable {
    /// One migration, bundled or recorded (or both).
    public struct Entry: Sendable, Equatable {
        public enum State: String, Sendable, Equatable {
            /// Recorded with the checksum of the bundled file.
            case applied
            /// Bundled, not recorded yet.
            case pending
            /// Recorded with another checksum: the file changed after it was applied.
            case checksumMismatch = "checksum-mismatch"
            /// Recorded, but this build does not bundle it (the database is newer than the build).
            case unknown
        }

        public var version: Int
        public var name: String
        public var state: State
        /// The bundled file's checksum; nil for an unknown migration.
        public var expectedChecksum: String?
        /// The checksum recorded when it was applied; nil while pending.
        public var appliedChecksum: String?
        public var appliedAt: Date?
    }

    public var entries: [Entry]

    /// True when the database is exactly at what this build expects.
    public var isCurrent: Bool { entries.allSatisfy { $0.state == .applied } }

    public func count(_ state: Entry.State) -> Int { entries.filter { $0.state == state }.count }
}

extension Migrator {
    /// Compares the recorded migrations with the bundled ones; a database never migrated has every one pending.
    public func status(client: PostgresClient) async throws -> MigrationStatus {
        let logger = self.logger
        let recorded = try await client.withConnection { connection in
            let exists = try await connection.query(
                "SELECT to_regclass('latchkey_schema_migrations') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present {
                return [Int: (String, String, Date)]()
            }
            let rows = try await connection.query(
                "SELECT version, name, checksum, applied_at FROM latchkey_schema_migrations", logger: logger)
            var recorded: [Int: (String, String, Date)] = [:]
            for try await (version, name, checksum, appliedAt) in rows.decode((Int, String, String, Date).self) {
                recorded[version] = (name, checksum, appliedAt)
            }
            return recorded
        }
        var entries = migrations.map { migration -> MigrationStatus.Entry in
            guard let (_, checksum, appliedAt) = recorded[migration.version] else {
                return MigrationStatus.Entry(
                    version: migration.version, name: migration.name, state: .pending,
                    expectedChecksum: migration.checksum)
            }
            return MigrationStatus.Entry(
                version: migration.version, name: migration.name,
                state: checksum == migration.checksum ? .applied : .checksumMismatch,
                expectedChecksum: migration.checksum, appliedChecksum: checksum, appliedAt: appliedAt)
        }
        let bundled = Set(migrations.map(\.version))
        for (version, (name, checksum, appliedAt)) in recorded where !bundled.contains(version) {
            entries.append(
                MigrationStatus.Entry(
                    version: version, name: name, state: .unknown, appliedChecksum: checksum, appliedAt: appliedAt))
        }
        return MigrationStatus(entries: entries.sorted { $0.version < $1.version })
    }
}
