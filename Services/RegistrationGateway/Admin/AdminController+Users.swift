import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// User management of the admin API: search and deletion (creation, disabling and enabling are in
/// ``AdminController``).
extension AdminController {
    /// `GET …/users?q=&status=&cursor=&limit=`: newest first; `q` matches a part of the username or email,
    /// case-insensitively; deleted users only with `status=deleted`.
    @Sendable func listUsers(_ request: Request, context: Context) async throws -> UserListView {
        let tenant = try context.requireTenant()
        let query = request.uri.queryParameters
        var filters = UserSearch.Filters()
        filters.text = try query["q"].map { try Self.bounded(String($0), field: "q", maximum: 254) }
        if let status = query["status"].map(String.init) {
            guard UserSearch.statuses.contains(status) else {
                throw OAuthError.invalidRequest("unknown status \(status)")
            }
            filters.status = status
        }
        let cursor = try query["cursor"].map { try UserSearch.Cursor(encoded: String($0)) }
        let limit =
            try query["limit"].map { raw -> Int in
                guard let value = Int(raw), (1...500).contains(value) else {
                    throw OAuthError.invalidRequest("limit must be 1–500")
                }
                return value
            } ?? 100
        let logger = database.logger
        let page = try await database.withTenantTransaction(tenant.id) { connection in
            try await UserSearch.search(
                tenant: tenant.id, filters, after: cursor, limit: limit, on: connection, logger: logger)
        }
        return UserListView(users: page.users, nextCursor: page.next?.encoded)
    }

    /// `DELETE …/users/{user_id}` with `{"reason": "…"}`: in one transaction every active instance of the user
    /// is revoked (`ClientRevoked`), their sessions, refresh tokens and live access tokens end (`TokenRevoked`),
    /// `UserDisabled` makes the sidecars refuse whatever token of theirs is left, and the user row becomes an
    /// anonymous tombstone (no name, email, password, external identities or consents). 404 when unknown or
    /// already deleted.
    @Sendable func deleteUser(_ request: Request, context: Context) async throws -> UserDeletedView {
        let (tenant, actor) = try authorized(context)
        guard let user = UUID(uuidString: try context.parameters.require("user_id")) else {
            throw OAuthError.notFound("unknown user")
        }
        let body = try await AdminBody.read(RevokeClientRequest.self, from: request)
        guard let rawReason = body.reason else { throw OAuthError.invalidRequest("reason is required") }
        let reason = try Self.bounded(rawReason, field: "reason", maximum: 480)
        let detail = "user deleted: \(reason)"
        let logger = database.logger
        let now = Date()
        let outcome = try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            let rows = try await connection.query(
                """
                SELECT status FROM users WHERE tenant_id = \(tenant.slug.rawValue) AND user_id = \(user) FOR UPDATE
                """, logger: logger)
            var status: String?
            for try await value in rows.decode(String.self) { status = value }
            guard let status, status != "deleted" else { throw OAuthError.notFound("unknown user") }
            let revoked = try await revocation.revokeAll(
                of: user, tenant: tenant.slug, actor: actor, detail: detail, at: now, on: connection)
            let event = UserDisabled(tenant: tenant.slug, userID: user, reason: detail, actor: actor, disabledAt: now)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: logger)
            try await connection.query(
                "DELETE FROM external_identities WHERE tenant_id = \(tenant.slug.rawValue) AND user_id = \(user)",
                logger: logger)
            try await connection.query(
                "DELETE FROM consents WHERE tenant_id = \(tenant.slug.rawValue) AND user_id = \(user)", logger: logger)
            try await connection.query(
                """
                UPDATE users SET status = 'deleted', username = \("deleted:" + user.uuidString.lowercased()),
                    email = NULL, email_verified = false, password_hash = NULL, deleted_at = \(now), updated_at = \(now)
                WHERE tenant_id = \(tenant.slug.rawValue) AND user_id = \(user)
                """, logger: logger)
            return revoked
        }
        context.logger.info(
            "user deleted",
            metadata: [
                "user_id": .string(user.uuidString.lowercased()), "clients": .stringConvertible(outcome.clients.count),
                "actor": .string(actor.id),
            ])
        return UserDeletedView(
            userID: user.uuidString.lowercased(), deletedAt: now, reason: reason, revoked: outcome.clients,
            ended: outcome.ended)
    }
}

/// `GET …/users`.
struct UserListView: ResponseEncodable, Sendable {
    var users: [UserSearch.Summary]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case users
        case nextCursor = "next_cursor"
    }
}

/// `DELETE …/users/{user_id}`.
struct UserDeletedView: ResponseEncodable, Sendable {
    var userID: String
    var deletedAt: Date
    var reason: String
    var revoked: [String]
    var ended: UserRevocation.Outcome

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case status, reason, revoked
        case deletedAt = "deleted_at"
        case sessionsEnded = "sessions_ended"
        case refreshTokensRevoked = "refresh_tokens_revoked"
        case accessTokensRevoked = "access_tokens_revoked"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userID, forKey: .userID)
        try container.encode("deleted", forKey: .status)
        try container.encode(reason, forKey: .reason)
        try container.encode(deletedAt, forKey: .deletedAt)
        try container.encode(revoked, forKey: .revoked)
        try container.encode(ended.sessions, forKey: .sessionsEnded)
        try container.encode(ended.refreshTokens, forKey: .refreshTokensRevoked)
        try container.encode(ended.accessTokens, forKey: .accessTokensRevoked)
    }
}
