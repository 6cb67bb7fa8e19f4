import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Ends refresh token families and access tokens on the caller's transaction, with their `TokenRevoked` events.
struct TokenRevocation: Sendable {
    let outbox: OutboxWriter

    /// Revokes every refresh token of the family and every access token issued from it; returns how many rows ended.
    @discardableResult
    func revokeFamily(
        _ familyID: UUID, tenant: ResolvedTenant, clientID: String, userID: UUID?, reason: TokenRevoked.Reason,
        actor: EventActor, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let refresh = try await connection.query(
            """
            UPDATE refresh_tokens SET status = 'revoked', revoked_at = now(), revoke_reason = \(reason.rawValue)
            WHERE family_id = \(familyID) AND status <> 'revoked' RETURNING 1
            """, logger: logger)
        var count = 0
        for try await _ in refresh.decode(Int.self) { count += 1 }
        // The family's live access tokens are named in the event, so sidecars refuse them at once.
        let access = try await connection.query(
            """
            UPDATE issued_access_tokens SET revoked_at = now()
            WHERE family_id = \(familyID) AND revoked_at IS NULL RETURNING jti, expires_at
            """, logger: logger)
        let now = Date()
        var live: [String] = []
        var lastExpiry: Date?
        for try await (jti, expiresAt) in access.decode((String, Date).self) {
            count += 1
            guard expiresAt > now else { continue }
            live.append(jti)
            lastExpiry = max(lastExpiry ?? expiresAt, expiresAt)
        }
        let event = TokenRevoked(
            tenant: tenant.slug, clientID: clientID, userID: userID, tokenType: .refresh,
            refreshFamilyID: familyID.uuidString.lowercased(), revokedCount: count,
            revokedJTIs: live.isEmpty ? nil : live, accessTokensExpireAt: lastExpiry, reason: reason, actor: actor,
            revokedAt: now)
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        BusinessMetrics.revoked(event)
        return count
    }

    /// Revokes one access token by `jti`; returns false when it was unknown or already revoked.
    @discardableResult
    func revokeAccessToken(
        jti: String, tenant: ResolvedTenant, clientID: String, userID: UUID?, reason: TokenRevoked.Reason,
        actor: EventActor, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            UPDATE issued_access_tokens SET revoked_at = now()
            WHERE jti = \(jti) AND client_id = \(clientID) AND revoked_at IS NULL RETURNING expires_at
            """, logger: logger)
        var expiry: Date?
        for try await expiresAt in rows.decode(Date.self) { expiry = expiresAt }
        guard let expiry else { return false }
        let event = TokenRevoked(
            tenant: tenant.slug, clientID: clientID, userID: userID, tokenType: .access, jti: jti, revokedCount: 1,
            revokedJTIs: [jti], accessTokensExpireAt: expiry, reason: reason, actor: actor, revokedAt: Date())
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        BusinessMetrics.revoked(event)
        return true
    }
}
