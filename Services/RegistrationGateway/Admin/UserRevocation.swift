import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Ends what a user holds beyond their clients, on the caller's transaction: SSO sessions (so a stolen
/// cookie cannot sign in again silently), refresh tokens on every client (static ones too) and live access
/// tokens, with one `TokenRevoked` (reason `admin`) per client naming the live `jti`s so that sidecars
/// refuse them at once.
struct UserRevocation: Sendable {
    let outbox: OutboxWriter

    /// What one call ended.
    struct Outcome: Sendable, Equatable {
        var sessions = 0
        var refreshTokens = 0
        var accessTokens = 0
    }

    func endSessionsAndTokens(
        of user: UUID, tenant: TenantSlug, actor: EventActor, detail: String?, at now: Date,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Outcome {
        var outcome = Outcome()
        let sessions = try await connection.query(
            """
            UPDATE sso_sessions SET revoked_at = \(now)
            WHERE tenant_id = \(tenant.rawValue) AND user_id = \(user) AND revoked_at IS NULL RETURNING 1
            """, logger: logger)
        for try await _ in sessions.decode(Int.self) { outcome.sessions += 1 }

        struct PerClient {
            var refresh = 0
            var access = 0
            var live: [String] = []
            var lastExpiry: Date?
        }
        var clients: [String: PerClient] = [:]
        let refresh = try await connection.query(
            """
            UPDATE refresh_tokens SET status = 'revoked', revoked_at = \(now), revoke_reason = \(TokenRevoked.Reason.admin.rawValue)
            WHERE tenant_id = \(tenant.rawValue) AND user_id = \(user) AND status <> 'revoked' RETURNING client_id
            """, logger: logger)
        for try await clientID in refresh.decode(String.self) {
            clients[clientID, default: PerClient()].refresh += 1
            outcome.refreshTokens += 1
        }
        let access = try await connection.query(
            """
            UPDATE issued_access_tokens SET revoked_at = \(now)
            WHERE tenant_id = \(tenant.rawValue) AND user_id = \(user) AND revoked_at IS NULL AND expires_at > \(now)
            RETURNING client_id, jti, expires_at
            """, logger: logger)
        for try await (clientID, jti, expiresAt) in access.decode((String, String, Date).self) {
            var entry = clients[clientID, default: PerClient()]
            entry.access += 1
            entry.live.append(jti)
            entry.lastExpiry = max(entry.lastExpiry ?? expiresAt, expiresAt)
            clients[clientID] = entry
            outcome.accessTokens += 1
        }
        for (clientID, ended) in clients.sorted(by: { $0.key < $1.key }) {
            let event = TokenRevoked(
                tenant: tenant, clientID: clientID, userID: user, tokenType: ended.refresh > 0 ? .refresh : .access,
                revokedCount: ended.refresh + ended.access, revokedJTIs: ended.live.isEmpty ? nil : ended.live.sorted(),
                accessTokensExpireAt: ended.lastExpiry, reason: .admin, reasonDetail: detail, actor: actor,
                revokedAt: now)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: logger)
            BusinessMetrics.revoked(event)
        }
        return outcome
    }

    /// Sets `users.status` to `disabled` or back to `active`; false when the user was already in that state.
    /// 404 when the tenant has no such user.
    func setDisabled(
        _ disabled: Bool, user: UUID, tenant: TenantSlug, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT status FROM users WHERE tenant_id = \(tenant.rawValue) AND user_id = \(user) FOR UPDATE",
            logger: logger)
        var current: String?
        for try await status in rows.decode(String.self) { current = status }
        guard let current, current != "deleted" else { throw OAuthError.notFound("unknown user") }
        let target = disabled ? "disabled" : "active"
        // Enabling only undoes a disable: a user locked for another reason stays locked.
        guard current != target, disabled || current == "disabled" else { return false }
        try await connection.query(
            "UPDATE users SET status = \(target), updated_at = now() WHERE tenant_id = \(tenant.rawValue) AND user_id = \(user)",
            logger: logger)
        return true
    }
}
