import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Revocation by an administrator, for the admin API and the admin page alike: the client leaves `active`,
/// its refresh tokens die and one `ClientRevoked` (reason `admin`, actor, free-text detail) is written to the
/// outbox, all in one transaction.
struct ClientRevocation: Sendable {
    let database: Database
    let outbox: OutboxWriter

    /// Revokes one client; 404 when the tenant has no such client, 409 when it is no longer active.
    @discardableResult
    func revoke(_ clientID: String, tenant: TenantSlug, actor: EventActor, detail: String?) async throws -> Date {
        let now = Date()
        try await database.withTenantTransaction(tenant.rawValue) { connection in
            guard
                let stored = try await ClientRepository.find(
                    clientID, tenant: tenant.rawValue, forUpdate: true, on: connection, logger: database.logger)
            else {
                throw OAuthError.notFound("unknown client")
            }
            guard stored.record.status == .active else {
                throw OAuthError(.conflict, "invalid_request", "the client is already \(stored.record.status.rawValue)")
            }
            try await revoke(stored.record, actor: actor, detail: detail, at: now, on: connection)
        }
        return now
    }

    /// What revoking a user's clients ended.
    struct UserOutcome: Sendable {
        /// The revoked client ids.
        var clients: [String]
        var ended: UserRevocation.Outcome
    }

    /// Revokes every active client of `user` (a stolen account, a departed employee) and, in the same
    /// transaction, the user's SSO sessions, refresh tokens on every client and live access tokens: otherwise
    /// whoever holds the session cookie registers a new instance at once.
    func revokeAll(of user: UUID, tenant: TenantSlug, actor: EventActor, detail: String?) async throws -> UserOutcome {
        let now = Date()
        return try await database.withTenantTransaction(tenant.rawValue) { connection in
            try await revokeAll(of: user, tenant: tenant, actor: actor, detail: detail, at: now, on: connection)
        }
    }

    /// ``revokeAll(of:tenant:actor:detail:)`` on the caller's transaction.
    func revokeAll(
        of user: UUID, tenant: TenantSlug, actor: EventActor, detail: String?, at now: Date,
        on connection: PostgresConnection
    ) async throws -> UserOutcome {
        let users = UserRevocation(outbox: outbox)
        let rows = try await connection.query(
            """
            SELECT client_id FROM clients
            WHERE tenant_id = \(tenant.rawValue) AND authenticated_user = \(user) AND status = 'active'
            ORDER BY client_id FOR UPDATE
            """, logger: database.logger)
        var ids: [String] = []
        for try await id in rows.decode(String.self) { ids.append(id) }
        for id in ids {
            guard
                let stored = try await ClientRepository.find(
                    id, tenant: tenant.rawValue, on: connection, logger: database.logger)
            else { continue }
            try await revoke(stored.record, actor: actor, detail: detail, at: now, on: connection)
        }
        let ended = try await users.endSessionsAndTokens(
            of: user, tenant: tenant, actor: actor, detail: detail, at: now, on: connection, logger: database.logger
        )
        return UserOutcome(clients: ids, ended: ended)
    }

    private func revoke(
        _ record: ClientRecord, actor: EventActor, detail: String?, at now: Date, on connection: PostgresConnection
    ) async throws {
        let reason = ClientRevoked.Reason.admin
        try await ClientRepository.revoke(
            record.clientID, tenant: record.tenant.rawValue, status: reason.resultingStatus,
            reason: detail ?? reason.rawValue,
            at: now, on: connection, logger: database.logger)
        let expiry = try await ClientRepository.accessTokensExpireAt(
            record, revokedAt: now, on: connection, logger: database.logger)
        let event = ClientRevoked(
            tenant: record.tenant, clientID: record.clientID, reason: reason, reasonDetail: detail,
            authenticatedUser: record.authenticatedUser, actor: actor, revokedAt: now, accessTokensExpireAt: expiry)
        try await outbox.append(
            CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: database.logger)
        BusinessMetrics.revoked(event)
    }
}
