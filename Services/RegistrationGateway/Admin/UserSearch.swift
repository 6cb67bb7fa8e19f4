import Foundation
import LatchkeyCore
import LatchkeyServer
import Logging
import PostgresNIO

/// The admin API's user list: a case-insensitive substring of the username or email, a status, newest
/// first, keyset (cursor) paging. Deleted users (anonymous tombstones) are listed only when asked for.
enum UserSearch {
    struct Filters: Sendable, Equatable {
        var text: String?
        var status: String?
    }

    static let statuses: Set<String> = ["active", "locked", "disabled", "deleted"]

    struct Summary: Encodable, Sendable {
        var userID: UUID
        var username: String
        var email: String?
        var emailVerified: Bool
        var status: String
        var createdAt: Date
        var lastLoginAt: Date?
        var activeClients: Int

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case username, email, status
            case emailVerified = "email_verified"
            case createdAt = "created_at"
            case lastLoginAt = "last_login_at"
            case activeClients = "active_clients"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userID.uuidString.lowercased(), forKey: .userID)
            try container.encode(username, forKey: .username)
            try container.encodeIfPresent(email, forKey: .email)
            try container.encode(emailVerified, forKey: .emailVerified)
            try container.encode(status, forKey: .status)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encodeIfPresent(lastLoginAt, forKey: .lastLoginAt)
            try container.encode(activeClients, forKey: .activeClients)
        }
    }

    /// The position after the last row of a page: its `created_at` in microseconds and its user id.
    struct Cursor: Sendable, Equatable {
        var createdAtMicroseconds: Int64
        var userID: UUID

        var encoded: String {
            Base64URL.encode(Array("\(createdAtMicroseconds)|\(userID.uuidString.lowercased())".utf8))
        }

        init(encoded: String) throws {
            guard encoded.utf8.count <= 256, let bytes = Base64URL.decodeBytes(Array(encoded.utf8)),
                let text = String(validating: bytes, as: UTF8.self),
                let bar = text.firstIndex(of: "|"), let micros = Int64(text[..<bar]),
                let id = UUID(uuidString: String(text[text.index(after: bar)...]))
            else { throw OAuthError.invalidRequest("cursor is malformed") }
            createdAtMicroseconds = micros
            userID = id
        }

        init(createdAtMicroseconds: Int64, userID: UUID) {
            self.createdAtMicroseconds = createdAtMicroseconds
            self.userID = userID
        }
    }

    /// `LIKE` pattern matching `text` literally anywhere.
    static func containsPattern(_ text: String) -> String {
        var escaped = ""
        for character in text.lowercased() {
            if character == "\\" || character == "%" || character == "_" { escaped.append("\\") }
            escaped.append(character)
        }
        return "%\(escaped)%"
    }

    static func search(
        tenant: String, _ filters: Filters, after cursor: Cursor?, limit: Int, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> (users: [Summary], next: Cursor?) {
        let pattern = filters.text.map(containsPattern)
        let rows = try await connection.query(
            """
            SELECT u.user_id, u.username, u.email, u.email_verified, u.status, u.created_at, u.last_login_at,
                   (SELECT count(*) FROM clients c
                    WHERE c.tenant_id = u.tenant_id AND c.authenticated_user = u.user_id AND c.status = 'active')::int8,
                   ((extract(epoch FROM u.created_at) * 1000000)::numeric(20, 0))::int8
            FROM users u
            WHERE u.tenant_id = \(tenant)
              AND (\(pattern)::text IS NULL OR lower(u.username) LIKE \(pattern) OR lower(coalesce(u.email, '')) LIKE \(pattern))
              AND (CASE WHEN \(filters.status)::text IS NULL THEN u.status <> 'deleted' ELSE u.status = \(filters.status) END)
              AND (\(cursor?.createdAtMicroseconds)::int8 IS NULL
                   OR (u.created_at, u.user_id) < (timestamptz 'epoch' + \(cursor?.createdAtMicroseconds)::int8 * interval '1 microsecond',
                                                   \(cursor?.userID)::uuid))
            ORDER BY u.created_at DESC, u.user_id DESC LIMIT \(limit + 1)
            """, logger: logger)
        var users: [Summary] = []
        var last: Cursor?
        for try await row in rows.decode((UUID, String, String?, Bool, String, Date, Date?, Int64, Int64).self) {
            guard users.count < limit else { return (users, last) }
            users.append(
                Summary(
                    userID: row.0, username: row.1, email: row.2, emailVerified: row.3, status: row.4, createdAt: row.5,
                    lastLoginAt: row.6, activeClients: Int(row.7)))
            last = Cursor(createdAtMicroseconds: row.8, userID: row.0)
        }
        return (users, nil)
    }
}
