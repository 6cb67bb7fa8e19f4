import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// A signed-in user's own app instances (dynamically registered clients) and what the user may do with
/// them: sign out of one (their grants only; other users of the same instance keep theirs) or, for the
/// user who registered it, remove it. Every call runs inside the caller's tenant transaction.
struct AccountDevices: Sendable {
    let outbox: OutboxWriter

    /// One instance as the account page and API show it.
    struct Device: Sendable, Encodable {
        var clientID: String
        var name: String?
        var softwareID: String?
        var status: String
        var registeredAt: Date
        var lastUsedAt: Date?
        /// The user registered this instance (its `authenticated_user`): they may remove it.
        var registeredByYou: Bool
        /// The user holds live grants (refresh or access tokens) on it.
        var signedIn: Bool

        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case name = "client_name"
            case softwareID = "software_id"
            case status
            case registeredAt = "registered_at"
            case lastUsedAt = "last_used_at"
            case registeredByYou = "registered_by_you"
            case signedIn = "signed_in"
        }
    }

    /// Instances the user registered or holds (or held) grants on, newest first; static clients (the
    /// tenant's own apps and services) are not devices.
    func list(user: UUID, on connection: PostgresConnection, logger: Logger) async throws -> [Device] {
        let rows = try await connection.query(
            """
            SELECT c.client_id, c.metadata->>'client_name', c.software_id, c.status, c.created_at, c.last_used_at,
                   coalesce(c.authenticated_user = \(user), false),
                   EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.tenant_id = c.tenant_id AND r.client_id = c.client_id
                             AND r.user_id = \(user) AND r.status = 'active' AND r.expires_at > now())
                   OR EXISTS (SELECT 1 FROM issued_access_tokens t WHERE t.tenant_id = c.tenant_id
                             AND t.client_id = c.client_id AND t.user_id = \(user) AND t.revoked_at IS NULL
                             AND t.expires_at > now())
            FROM clients c
            WHERE c.client_kind = 'dynamic'
              AND (c.authenticated_user = \(user)
                   OR EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.tenant_id = c.tenant_id
                              AND r.client_id = c.client_id AND r.user_id = \(user))
                   OR EXISTS (SELECT 1 FROM issued_access_tokens t WHERE t.tenant_id = c.tenant_id
                              AND t.client_id = c.client_id AND t.user_id = \(user)))
            ORDER BY c.created_at DESC, c.client_id
            LIMIT 200
            """, logger: logger)
        var devices: [Device] = []
        for try await row in rows.decode((String, String?, String?, String, Date, Date?, Bool, Bool).self) {
            devices.append(
                Device(
                    clientID: row.0, name: row.1, softwareID: row.2, status: row.3, registeredAt: row.4,
                    lastUsedAt: row.5, registeredByYou: row.6, signedIn: row.7 && row.3 == "active"))
        }
        return devices
    }

    /// The device if it is one of the user's (see ``list``).
    func find(_ clientID: String, user: UUID, on connection: PostgresConnection, logger: Logger) async throws
        -> Device?
    {
        try await list(user: user, on: connection, logger: logger).first { $0.clientID == clientID }
    }

    /// What "sign out of this device" ended.
    struct SignedOut: Sendable, Equatable, Encodable {
        var refreshTokens = 0
        var accessTokens = 0

        enum CodingKeys: String, CodingKey {
            case refreshTokens = "refresh_tokens_revoked"
            case accessTokens = "access_tokens_revoked"
        }
    }

    /// Ends the user's refresh tokens and live access tokens on one client and forgets their consent to it,
    /// with one `TokenRevoked` (reason `user`, naming the user and the live `jti`s so sidecars refuse them);
    /// other users' grants on the same instance stay.
    func signOut(
        user: UUID, clientID: String, tenant: TenantSlug, on connection: PostgresConnection, logger: Logger
    ) async throws -> SignedOut {
        let now = Date()
        var ended = SignedOut()
        let refresh = try await connection.query(
            """
            UPDATE refresh_tokens SET status = 'revoked', revoked_at = \(now), revoke_reason = \(TokenRevoked.Reason.user.rawValue)
            WHERE client_id = \(clientID) AND user_id = \(user) AND status <> 'revoked' RETURNING 1
            """, logger: logger)
        for try await _ in refresh.decode(Int.self) { ended.refreshTokens += 1 }
        let access = try await connection.query(
            """
            UPDATE issued_access_tokens SET revoked_at = \(now)
            WHERE client_id = \(clientID) AND user_id = \(user) AND revoked_at IS NULL AND expires_at > \(now)
            RETURNING jti, expires_at
            """, logger: logger)
        var live: [String] = []
        var lastExpiry: Date?
        for try await (jti, expiresAt) in access.decode((String, Date).self) {
            live.append(jti)
            lastExpiry = max(lastExpiry ?? expiresAt, expiresAt)
        }
        ended.accessTokens = live.count
        // The next sign-in of this user on another user's instance asks for consent again.
        try await connection.query(
            "DELETE FROM consents WHERE user_id = \(user) AND client_id = \(clientID)", logger: logger)
        let event = TokenRevoked(
            tenant: tenant, clientID: clientID, userID: user, tokenType: ended.refreshTokens > 0 ? .refresh : .access,
            revokedCount: ended.refreshTokens + ended.accessTokens, revokedJTIs: live.isEmpty ? nil : live.sorted(),
            accessTokensExpireAt: lastExpiry, reason: .user, actor: .user(user), revokedAt: now)
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        return ended
    }

    /// "Remove this device", for the user who registered the instance: the client is revoked for everyone
    /// (`ClientRevoked`, reason `user`), with its refresh tokens; sidecars refuse its access tokens from
    /// the event. False when the client is not active any more.
    func remove(
        user: UUID, clientID: String, tenant: ResolvedTenant, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let now = Date()
        let rows = try await connection.query(
            """
            UPDATE clients SET status = 'revoked', revoked_at = \(now), revocation_reason = \(ClientRevoked.Reason.user.rawValue),
                updated_at = \(now)
            WHERE client_id = \(clientID) AND authenticated_user = \(user) AND status = 'active' RETURNING 1
            """, logger: logger)
        var changed = false
        for try await _ in rows.decode(Int.self) { changed = true }
        guard changed else { return false }
        try await connection.query(
            """
            UPDATE refresh_tokens SET status = 'revoked', revoked_at = \(now), revoke_reason = \(TokenRevoked.Reason.clientRevoked.rawValue)
            WHERE client_id = \(clientID) AND status <> 'revoked'
            """, logger: logger)
        let expiry = try await connection.query(
            "SELECT max(expires_at) FROM issued_access_tokens WHERE client_id = \(clientID) AND revoked_at IS NULL",
            logger: logger)
        var recorded: Date?
        for try await value in expiry.decode(Date?.self) { recorded = value }
        // A grant that read the client as active just before this commit may still sign a token.
        let signedNow = now.addingTimeInterval(
            TimeInterval(Int64(tenant.policy.tokenLifetimes.accessToken) + ClientRevoked.issuanceSlackSeconds))
        let event = ClientRevoked(
            tenant: tenant.slug, clientID: clientID, reason: .user, reasonDetail: nil, authenticatedUser: user,
            actor: .user(user), revokedAt: now, accessTokensExpireAt: max(recorded ?? signedNow, signedNow))
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        return true
    }
}
