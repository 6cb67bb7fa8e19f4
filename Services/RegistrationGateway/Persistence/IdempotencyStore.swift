import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// `registration_idempotency_keys`: which registration an `Idempotency-Key` of a principal belongs to.
///
/// A key is claimed in its own short transaction before the registration starts, so a concurrent
/// request with the same key sees it in flight (the unique insert decides who owns it) instead of
/// waiting on a lock for the whole registration.
enum IdempotencyStore {
    /// One idempotency key of one principal in one tenant, by keyed hashes only.
    struct Entry: Sendable {
        var tenant: String
        var principal: String
        var keyHash: String
        var requestHash: String
    }

    /// What the claim of a key found.
    enum Claim: Sendable, Equatable {
        /// The key is new (or its old row expired or was abandoned): this request registers.
        case acquired
        /// The key was used with a different request body.
        case mismatch
        /// Another request with the key is still registering.
        case inFlight
        /// The key already registered this client.
        case completed(clientID: String)
    }

    /// Claims `entry` for this request, or says who holds it.
    static func claim(_ entry: Entry, on connection: PostgresConnection, logger: Logger) async throws -> Claim {
        let lifetime = Double(IdempotencyKey.lifetimeSeconds)
        let abandoned = Double(IdempotencyKey.abandonedAfterSeconds)
        let inserted = try await connection.query(
            """
            INSERT INTO registration_idempotency_keys AS k
                   (tenant_id, principal, key_hash, request_hash, state, expires_at)
            VALUES (\(entry.tenant), \(entry.principal), \(entry.keyHash), \(entry.requestHash), 'in_flight',
                    now() + make_interval(secs => \(lifetime)))
            ON CONFLICT (tenant_id, principal, key_hash) DO UPDATE
               SET request_hash = EXCLUDED.request_hash, state = 'in_flight', client_id = NULL,
                   created_at = now(), updated_at = now(), expires_at = EXCLUDED.expires_at
             WHERE k.expires_at <= now()
                OR (k.state = 'in_flight' AND k.request_hash = EXCLUDED.request_hash
                    AND k.updated_at < now() - make_interval(secs => \(abandoned)))
            RETURNING 1
            """, logger: logger)
        for try await _ in inserted.decode(Int.self) { return .acquired }
        let rows = try await connection.query(
            """
            SELECT request_hash, state, client_id FROM registration_idempotency_keys
            WHERE tenant_id = \(entry.tenant) AND principal = \(entry.principal) AND key_hash = \(entry.keyHash)
            """, logger: logger)
        for try await (requestHash, state, clientID) in rows.decode((String, String, String?).self) {
            guard requestHash == entry.requestHash else { return .mismatch }
            if state == "completed", let clientID { return .completed(clientID: clientID) }
            return .inFlight
        }
        // Deleted by a failed registration between the two statements: that request is over.
        return .inFlight
    }

    /// Marks `entry` as having registered `clientID`, in the registration's transaction.
    static func complete(_ entry: Entry, clientID: String, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        try await connection.query(
            """
            UPDATE registration_idempotency_keys SET state = 'completed', client_id = \(clientID), updated_at = now()
            WHERE tenant_id = \(entry.tenant) AND principal = \(entry.principal) AND key_hash = \(entry.keyHash)
            """, logger: logger)
    }

    /// Gives a key back after its registration failed, so the caller may retry with it.
    static func release(_ entry: Entry, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            DELETE FROM registration_idempotency_keys
            WHERE tenant_id = \(entry.tenant) AND principal = \(entry.principal) AND key_hash = \(entry.keyHash)
              AND state = 'in_flight'
            """, logger: logger)
    }
}
