import Crypto
import Foundation

/// One ordered SQL migration shipped with the `LatchkeyPersistence` module (`Postgres/Migrations/NNNN_name.sql`).
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String

    /// SHA-256 of the file, recorded when applied so an edited migration is noticed.
    public var checksum: String {
        SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
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
            return Migration(
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
        }
    }
}
