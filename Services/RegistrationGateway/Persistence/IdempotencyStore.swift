import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO

/// `registration_idempotency_keys`: which registration an `Idempotency-Key` of a principal belongs to.
///
/// A key is claimed in a statement of its own before the registration starts, so a concurrent
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

    /// Claims `entry` for this request, or says who holds it: one statement, a transaction of its own, so
    /// concurrent retries with the key lock its row only for that statement and its commit.
    static func claim(_ entry: Entry, in database: Database) async throws -> Claim {
        let found = try await database.withStatementTransaction(tenant: entry.tenant) {
            let rows = try await database.client.query(
                """
                SELECT claim, claimed_client_id FROM claim_registration_idempotency_key(\(entry.tenant),
                    \(entry.principal), \(entry.keyHash), \(entry.requestHash),
                    \(Double(IdempotencyKey.lifetimeSeconds)), \(Double(IdempotencyKey.abandonedAfterSeconds)))
                """, logger: database.logger)
            var found: (String, String?)?
            for try await row in rows.decode((String, String?).self) { found = row }
            return found
        }
        switch found {
        case ("acquired", _)?: return .acquired
        case ("mismatch", _)?: return .mismatch
        case ("completed", let clientID?)?: return .completed(clientID: clientID)
        case ("in_flight", _)?: return .inFlight
        default: throw DatabaseFunctionOutcomeUnknown(function: "claim_registration_idempotency_key", outcome: found?.0)
        }
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
