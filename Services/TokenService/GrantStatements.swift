import Foundation
import LatchkeyPersistence
import PostgresNIO

// The statements of the grants, run as named prepared statements: PostgreSQL parses and plans each one once
// per connection and then only binds and executes it, instead of parsing and planning its text on every grant.
// Each is one function call, its own transaction (see the functions in the migrations for what they check).
// Each names itself: PostgresNIO's default name is the type's name, built by reflection on every execution.

/// `issue_access_token(…)`: an access token alone (`client_credentials`), its record and its `TokenIssued`
/// row; true when written.
struct IssueAccessTokenStatement: PostgresPreparedStatement {
    static let name = "latchkey_issue_access_token"
    static let sql = """
        SELECT issue_access_token($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
        FROM outbox_woken_by_caller($15)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .text, .text, .text, .uuid, .uuid, .timestamptz, .uuid, .text, .text, .text, .text, .text, .text,
        .bool,
    ]
    typealias Row = Bool

    var tenant: String
    var client: StoredClient
    var jti: String
    var userID: UUID?
    var familyID: UUID?
    var expiresAt: Date
    var event: OutboxRow
    var relayWokenByCaller: Bool

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 15)
        bindings.append(tenant)
        bindings.append(client.clientID)
        bindings.append(client.authenticatedSecretHash)
        bindings.append(jti)
        bindings.append(userID)
        bindings.append(familyID)
        bindings.append(expiresAt)
        bindings.append(event.eventID)
        bindings.append(event.topic)
        bindings.append(event.key)
        bindings.append(event.eventType)
        bindings.append(event.payload)
        bindings.append(client.storedMetadata)
        bindings.append(event.traceparent)
        bindings.append(relayWokenByCaller)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}

/// `rotate_refresh_token(…)`: the old token rotated, its successor, the access token's record and the
/// `TokenIssued` row; true when written.
struct RotateRefreshTokenStatement: PostgresPreparedStatement {
    static let name = "latchkey_rotate_refresh_token"
    static let sql = """
        SELECT rotate_refresh_token($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
        $18, $19, $20) FROM outbox_woken_by_caller($21)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .text, .text, .text, .uuid, .text, .int8, .text, .uuid, .text, .text, .timestamptz, .text,
        .timestamptz, .uuid, .text, .text, .text, .text, .text, .bool,
    ]
    typealias Row = Bool

    var tenant: String
    var client: StoredClient
    var userID: UUID?
    var oldTokenHash: String
    var oldGeneration: Int
    var newTokenHash: String?
    var plan: RefreshPlan
    var scope: String
    var jti: String
    var accessExpiresAt: Date
    var event: OutboxRow
    var relayWokenByCaller: Bool

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 21)
        bindings.append(tenant)
        bindings.append(client.clientID)
        bindings.append(client.authenticatedSecretHash)
        bindings.append(client.storedMetadata)
        bindings.append(userID)
        bindings.append(oldTokenHash)
        bindings.append(oldGeneration)
        bindings.append(newTokenHash)
        bindings.append(plan.familyID)
        bindings.append(scope)
        bindings.append(plan.boundJKT)
        bindings.append(plan.expiresAt)
        bindings.append(jti)
        bindings.append(accessExpiresAt)
        bindings.append(outboxRow: event)
        bindings.append(relayWokenByCaller)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}

/// `redeem_authorization_code(…)`: the code used up with what it issued, the access token's record, the
/// refresh token of a new family when planned and the `TokenIssued` row; true when written.
struct RedeemAuthorizationCodeStatement: PostgresPreparedStatement {
    static let name = "latchkey_redeem_authorization_code"
    static let sql = """
        SELECT redeem_authorization_code($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
        $17, $18, $19) FROM outbox_woken_by_caller($20)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .text, .text, .text, .uuid, .text, .text, .uuid, .text, .text, .timestamptz, .text, .timestamptz,
        .uuid, .text, .text, .text, .text, .text, .bool,
    ]
    typealias Row = Bool

    var tenant: String
    var client: StoredClient
    var userID: UUID?
    var codeHash: String
    var refreshTokenHash: String?
    var plan: RefreshPlan?
    var scope: String
    var jti: String
    var accessExpiresAt: Date
    var event: OutboxRow
    var relayWokenByCaller: Bool

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 20)
        bindings.append(tenant)
        bindings.append(client.clientID)
        bindings.append(client.authenticatedSecretHash)
        bindings.append(client.storedMetadata)
        bindings.append(userID)
        bindings.append(codeHash)
        bindings.append(refreshTokenHash)
        bindings.append(plan?.familyID)
        bindings.append(scope)
        bindings.append(plan?.boundJKT)
        bindings.append(plan?.expiresAt)
        bindings.append(jti)
        bindings.append(accessExpiresAt)
        bindings.append(outboxRow: event)
        bindings.append(relayWokenByCaller)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}

/// `authorization_code_state(tenant, code hash)`: the code's row and whether its user is active, read without a
/// lock.
struct AuthorizationCodeStateStatement: PostgresPreparedStatement {
    static let name = "latchkey_authorization_code_state"
    static let sql = "SELECT * FROM authorization_code_state($1, $2)"
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .text,
    ]
    typealias Row = (String, UUID, String, String, String?, String?, String?, String?, Date, Date, Date?, Bool)

    var tenant: String
    var codeHash: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(tenant)
        bindings.append(codeHash)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// `refresh_token_state(tenant, token hash)`: the token's row and whether its user is active, read without a
/// lock.
struct RefreshTokenStateStatement: PostgresPreparedStatement {
    static let name = "latchkey_refresh_token_state"
    static let sql = "SELECT * FROM refresh_token_state($1, $2)"
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .text,
    ]
    typealias Row = (UUID, Int, String, UUID?, String, String?, String, Date, Date?, Bool)

    var tenant: String
    var tokenHash: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(tenant)
        bindings.append(tokenHash)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
