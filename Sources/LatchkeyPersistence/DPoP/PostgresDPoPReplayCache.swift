import Crypto
import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// A replay cache shared by every replica through PostgreSQL (`dpop_replay`): the first replica to see a
/// (key, `jti`) pair inserts it; any later sighting before it expires is a replay. Entries past their
/// expiry are overwritten in place and swept by ``sweepExpired()``. A database failure counts as a
/// replay: an unverifiable proof is refused rather than accepted twice.
public struct PostgresDPoPReplayCache: DPoPReplayCache {
    public let database: Database

    public init(database: Database) {
        self.database = database
    }

    public func insertIfAbsent(jkt: String, jti: String, expiresAt: Int64) async -> Bool {
        var hash = SHA256()
        hash.update(data: Data(jkt.utf8))
        hash.update(data: [0])
        hash.update(data: Data(jti.utf8))
        let key = Data(hash.finalize())
        let expiry = Date(timeIntervalSince1970: TimeInterval(expiresAt))
        do {
            let rows = try await database.client.query(
                """
                INSERT INTO dpop_replay (key, expires_at) VALUES (\(key), \(expiry))
                ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE dpop_replay.expires_at < now()
                RETURNING 1
                """, logger: database.logger)
            for try await _ in rows.decode(Int.self) { return true }
            return false
        } catch {
            database.logger.error(
                "DPoP replay store unavailable; refusing the proof", metadata: ["error": "\(error.logDescription)"])
            return false
        }
    }

    /// Deletes expired entries; returns how many.
    @discardableResult
    public func sweepExpired() async throws -> Int {
        let rows = try await database.client.query(
            "DELETE FROM dpop_replay WHERE expires_at < now() RETURNING 1", logger: database.logger)
        var count = 0
        for try await _ in rows.decode(Int.self) { count += 1 }
        return count
    }
}

/// Where a service remembers DPoP proof (and client-assertion) identifiers: `DPOP_REPLAY_STORE=memory`
/// (this process; right for a single replica) or `postgres` (shared by every replica of the database).
public enum DPoPReplayStore: String, Sendable {
    case memory, postgres

    /// A cache of this kind.
    public func makeCache(database: Database) -> any DPoPReplayCache {
        switch self {
        case .memory: InMemoryDPoPReplayCache()
        case .postgres: PostgresDPoPReplayCache(database: database)
        }
    }
}
