import Crypto
import Foundation

/// One ordered SQL migration shipped with the `LatchkeyPersistence` module (`Postgres/Migrations/NNNN_name.sql`).
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String
    /// The oldest build schema version that still works once this migration is applied: builds whose
    /// latest migration is at least this one keep serving through the rolling upgrade that applies it.
    /// An expand step (new nullable column, new table, new index) that the previous build ignores
    /// declares it with a leading comment line `-- compatible_from: N`; without the line, only builds
    /// that ship this migration work with it.
    public let compatibleFrom: Int

    /// SHA-256 of the file, recorded when applied so an edited migration is noticed.
    public var checksum: String {
        SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public init(version: Int, name: String, sql: String) throws {
        self.version = version
        self.name = name
        self.sql = sql
        self.compatibleFrom = try Self.declaredCompatibility(in: sql, version: version) ?? version
    }

    static let compatibilityPrefix = "-- compatible_from:"

    /// The `-- compatible_from: N` line among the comments that open the file (nil when absent).
    static func declaredCompatibility(in sql: String, version: Int) throws -> Int? {
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard trimmed.hasPrefix("--") else { return nil }
            guard trimmed.hasPrefix(compatibilityPrefix) else { continue }
            let value = trimmed.dropFirst(compatibilityPrefix.count).trimmingCharacters(in: .whitespaces)
            // Declaring a version above its own would let a build run on a schema it has never seen.
            guard let from = Int(value), (1...version).contains(from) else {
                throw MigrationError.badCompatibility(version: version, declared: value)
            }
            return from
        }
        return nil
    }

    /// The migrations bundled with Latchkey, in version order.
    public static func bundled() throws -> [Migration] {
        guard let folder = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
            throw MigrationError.missingMigrations
        }
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        let migrations = try files.filter { $0.pathExtension == "sql" }.map { url -> Migration in
            let base = url.deletingPathExtension().lastPathComponent
            guard let underscore = base.firstIndex(of: "_"), let version = Int(base[..<underscore]) else {
                throw MigrationError.badFileName(url.lastPathComponent)
            }
            return try Migration(
                version: version, name: String(base[base.index(after: underscore)...]),
                sql: try String(contentsOf: url, encoding: .utf8))
        }.sorted { $0.version < $1.version }
        // Numbers may be reserved for branches developed in parallel, so gaps are allowed; repeats are not.
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw MigrationError.duplicateVersion(next.version)
        }
        return migrations
    }
}

/// Why migrating or the start-up schema check failed.
public enum MigrationError: Error, CustomStringConvertible, Equatable {
    case missingMigrations
    case badFileName(String)
    case duplicateVersion(Int)
    case checksumMismatch(version: Int, name: String)
    case unexpectedSchemaVersion(found: Int, expected: Int)
    case unknownAppliedVersion(Int)
    case badCompatibility(version: Int, declared: String)
    /// The database holds migrations after this build's that do not keep it working.
    case incompatibleSchemaVersion(found: Int, build: Int, compatibleFrom: Int)
    /// `migrate` from a build older than the database: it would apply nothing and hide the mismatch.
    case newerSchema(found: Int, build: Int)
    /// A migration numbered below one already applied: it would run after changes it predates.
    case outOfOrder(version: Int, applied: Int)

    public var description: String {
        switch self {
        case .missingMigrations: "no migrations are bundled with this build"
        case .badFileName(let name): "migration file \(name) is not named NNNN_name.sql"
        case .duplicateVersion(let version): "two migrations are numbered \(version)"
        case .checksumMismatch(let version, let name):
            "migration \(version) (\(name)) was changed after it was applied; restore it and add a new migration instead"
        case .unexpectedSchemaVersion(let found, let expected):
            "database schema is at version \(found) but this build expects \(expected); run `latchkey migrate` (or the service's `migrate` subcommand) with the migration role"
        case .unknownAppliedVersion(let version):
            "database has migration \(version) applied, which this build does not know: it is older than the schema"
        case .badCompatibility(let version, let declared):
            "migration \(version) declares compatible_from \(declared); it must be a version from 1 to \(version)"
        case .incompatibleSchemaVersion(let found, let build, let compatibleFrom):
            "database schema is at version \(found), which works with builds at schema \(compatibleFrom) or later, but this build is at \(build); deploy a build at schema \(compatibleFrom) or later"
        case .newerSchema(let found, let build):
            "database schema is at version \(found), newer than this build's \(build); migrations never run backwards: migrate with the newest build"
        case .outOfOrder(let version, let applied):
            "migration \(version) is pending but migration \(applied) is already applied; renumber it after \(applied)"
        }
    }
}
