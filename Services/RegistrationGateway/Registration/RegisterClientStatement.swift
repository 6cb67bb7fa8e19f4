import Foundation
import LatchkeyPersistence
import PostgresNIO

/// `register_client(…)`: a registration's rate-limit counters, the initial access token's use or the user's
/// checks, the client and its `ClientRegistered` row, one statement and one commit; the function's outcome
/// and, when rate limited, the seconds to wait. A named prepared statement: PostgreSQL parses and plans it
/// once per connection and then only binds and executes it, under its own name (PostgresNIO's default name is
/// built by reflection on every execution).
///
/// `OFFSET 0` keeps the function call in the inner query, so it runs once (not once per column) and after
/// the FROM item that may turn the outbox notification off.
struct RegisterClientStatement: PostgresPreparedStatement {
    static let name = "latchkey_register_client"
    static let sql = """
        SELECT (r).outcome, (r).retry_after FROM (SELECT register_client($1, $2, $3::int[], $4, $5, $6, $7, \
        $8::int, $9, $10::int, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26) AS r \
        FROM outbox_woken_by_caller($27) OFFSET 0) AS registration
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .textArray, .int8Array, .float8, .text, .uuid, .text, .int8, .text, .int8, .text, .text, .text, .text,
        .text, .text, .timestamptz, .text, .timestamptz, .text, .uuid, .text, .text, .text, .text, .text, .bool,
    ]
    typealias Row = (outcome: String, retryAfter: Double?)

    var tenant: String
    var buckets: [RegistrationRateLimiter.Bucket]
    var windowSeconds: Double
    var initialAccessTokenHash: String?
    var userID: UUID?
    var instanceJKT: String?
    var maxClientsPerUser: Int
    var softwareID: String?
    var templateVersion: Int?
    var clientID: String
    var clientType: String
    var applicationType: String
    var mechanism: String
    var metadata: String
    var secretHash: String?
    var secretExpiresAt: Date?
    var registrationTokenHash: String
    var createdAt: Date
    var templateOverrides: String?
    var event: OutboxRow
    var relayWokenByCaller: Bool

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 27)
        bindings.append(tenant)
        bindings.append(buckets.map(\.key))
        bindings.append(buckets.map(\.limit))
        bindings.append(windowSeconds)
        bindings.append(initialAccessTokenHash)
        bindings.append(userID)
        bindings.append(instanceJKT)
        bindings.append(maxClientsPerUser)
        bindings.append(softwareID)
        bindings.append(templateVersion)
        bindings.append(clientID)
        bindings.append(clientType)
        bindings.append(applicationType)
        bindings.append(mechanism)
        bindings.append(metadata)
        bindings.append(secretHash)
        bindings.append(secretExpiresAt)
        bindings.append(registrationTokenHash)
        bindings.append(createdAt)
        bindings.append(templateOverrides)
        bindings.append(outboxRow: event)
        bindings.append(relayWokenByCaller)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((String, Double?).self) }
}
