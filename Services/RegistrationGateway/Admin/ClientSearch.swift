import Foundation
import LatchkeyCore
import LatchkeyServer
import Logging
import PostgresNIO

/// Instance search of the admin API and the admin page: filters, newest first, keyset (cursor) paging.
enum ClientSearch {
    /// What to look for; nil fields do not filter.
    struct Filters: Sendable, Equatable {
        var userID: UUID?
        /// A username, compared case-insensitively (the page lets an administrator type a name).
        var username: String?
        var status: ClientStatus?
        var softwareID: String?
        var createdFrom: Date?
        /// Exclusive upper bound.
        var createdBefore: Date?
    }

    /// One client as a search lists it.
    struct Summary: Sendable {
        var clientID: String
        var status: String
        var clientKind: String
        var clientType: String
        var applicationType: String
        var authenticatedUser: UUID?
        var username: String?
        var softwareID: String?
        var registrationMechanism: String
        var clientName: String?
        var createdAt: Date
        var lastUsedAt: Date?
        var revokedAt: Date?
        var revocationReason: String?
    }

    /// The position after the last row of a page: its `created_at` in microseconds and its client id.
    struct Cursor: Sendable, Equatable {
        var createdAtMicroseconds: Int64
        var clientID: String

        var encoded: String { Base64URL.encode(Array("\(createdAtMicroseconds)|\(clientID)".utf8)) }

        /// Parses a cursor this search produced; anything else is `invalid_request`.
        init(encoded: String) throws {
            guard encoded.utf8.count <= 512, let bytes = Base64URL.decodeBytes(Array(encoded.utf8)),
                let text = String(validating: bytes, as: UTF8.self),
                let bar = text.firstIndex(of: "|"), let micros = Int64(text[..<bar]),
                case let id = String(text[text.index(after: bar)...]), !id.isEmpty, id.utf8.count <= 256
            else { throw OAuthError.invalidRequest("cursor is malformed") }
            createdAtMicroseconds = micros
            clientID = id
        }

        init(createdAtMicroseconds: Int64, clientID: String) {
            self.createdAtMicroseconds = createdAtMicroseconds
            self.clientID = clientID
        }
    }

    /// Up to `limit` clients after `cursor`, and the cursor of the next page when there is one.
    static func search(
        tenant: String, _ filters: Filters, after cursor: Cursor?, limit: Int, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> (clients: [Summary], next: Cursor?) {
        let status = filters.status?.rawValue
        let rows = try await connection.query(
            """
            SELECT c.client_id, c.status, c.client_kind, c.client_type, c.application_type, c.authenticated_user, u.username,
                   c.software_id, c.registration_mechanism, c.metadata->>'client_name', c.created_at, c.last_used_at,
                   c.revoked_at, c.revocation_reason,
                   ((extract(epoch FROM c.created_at) * 1000000)::numeric(20, 0))::int8
            FROM clients c LEFT JOIN users u ON u.tenant_id = c.tenant_id AND u.user_id = c.authenticated_user
            WHERE c.tenant_id = \(tenant)
              AND (\(filters.userID)::uuid IS NULL OR c.authenticated_user = \(filters.userID))
              AND (\(filters.username)::text IS NULL OR lower(u.username) = lower(\(filters.username)))
              AND (\(status)::text IS NULL OR c.status = \(status))
              AND (\(filters.softwareID)::text IS NULL OR c.software_id = \(filters.softwareID))
              AND (\(filters.createdFrom)::timestamptz IS NULL OR c.created_at >= \(filters.createdFrom))
              AND (\(filters.createdBefore)::timestamptz IS NULL OR c.created_at < \(filters.createdBefore))
              AND (\(cursor?.createdAtMicroseconds)::int8 IS NULL
                   OR (c.created_at, c.client_id) < (timestamptz 'epoch' + \(cursor?.createdAtMicroseconds)::int8 * interval '1 microsecond',
                                                     \(cursor?.clientID)::text))
            ORDER BY c.created_at DESC, c.client_id DESC LIMIT \(limit + 1)
            """, logger: logger)
        typealias Row = (
            String, String, String, String, String, UUID?, String?, String?, String, String?, Date, Date?, Date?,
            String?, Int64
        )
        var clients: [Summary] = []
        var last: Cursor?
        for try await row in rows.decode(Row.self) {
            guard clients.count < limit else { return (clients, last) }
            clients.append(
                Summary(
                    clientID: row.0, status: row.1, clientKind: row.2, clientType: row.3, applicationType: row.4,
                    authenticatedUser: row.5, username: row.6, softwareID: row.7, registrationMechanism: row.8,
                    clientName: row.9,
                    createdAt: row.10, lastUsedAt: row.11, revokedAt: row.12, revocationReason: row.13))
            last = Cursor(createdAtMicroseconds: row.14, clientID: row.0)
        }
        return (clients, nil)
    }
}

extension ClientSearch.Summary: Encodable {
    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case status
        case clientKind = "client_kind"
        case clientType = "client_type"
        case applicationType = "application_type"
        case registrationMechanism = "registration_mechanism"
        case createdAt = "created_at"
        case authenticatedUser = "authenticated_user"
        case username
        case softwareID = "software_id"
        case clientName = "client_name"
        case lastUsedAt = "last_used_at"
        case revokedAt = "revoked_at"
        case revocationReason = "revocation_reason"
    }

    /// The admin API's JSON shape: user ids in lower case, absent members left out.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(clientID, forKey: .clientID)
        try container.encode(status, forKey: .status)
        try container.encode(clientKind, forKey: .clientKind)
        try container.encode(clientType, forKey: .clientType)
        try container.encode(applicationType, forKey: .applicationType)
        try container.encode(registrationMechanism, forKey: .registrationMechanism)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(authenticatedUser?.uuidString.lowercased(), forKey: .authenticatedUser)
        try container.encodeIfPresent(username, forKey: .username)
        try container.encodeIfPresent(softwareID, forKey: .softwareID)
        try container.encodeIfPresent(clientName, forKey: .clientName)
        try container.encodeIfPresent(lastUsedAt, forKey: .lastUsedAt)
        try container.encodeIfPresent(revokedAt, forKey: .revokedAt)
        try container.encodeIfPresent(revocationReason, forKey: .revocationReason)
    }
}
