import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// A signed-in admin page session.
struct AdminSession: Sendable {
    /// The tenant whose `admin_sessions` row holds the session (the page's tenant, or the platform tenant).
    let storedIn: String
    /// The session id from the cookie (the CSRF tokens of the session's forms are derived from it).
    let id: String
    /// The admin client that signed in: the actor of everything done in this session.
    let clientID: String
    let clientTenant: String

    var actor: EventActor { .admin(clientID) }
}

/// Server-side admin page sessions: a random id in the `__Host-latchkey_admin` cookie, only its keyed hash in
/// `admin_sessions`, an absolute and an idle lifetime, a new id on every sign-in (no session fixation).
struct AdminSessions: Sendable {
    static let cookieName = "__Host-latchkey_admin"
    let database: Database
    let hasher: KeyedHasher
    let platformTenant: TenantSlug?
    var absoluteLifetime: TimeInterval = 8 * 3600
    var idleTimeout: TimeInterval = 30 * 60

    /// The live session the cookie names for `tenant`'s page (a session of another tenant only when it
    /// belongs to a platform admin), its idle clock restarted; nil when there is none.
    func current(_ cookie: String?, tenant: String) async throws -> AdminSession? {
        guard let cookie, CSRFGuard.isWellFormed(cookie) else { return nil }
        if let session = try await touch(cookie, storedIn: tenant, platformOnly: false) { return session }
        guard let platform = platformTenant?.rawValue, platform != tenant else { return nil }
        return try await touch(cookie, storedIn: platform, platformOnly: true)
    }

    private func touch(_ cookie: String, storedIn tenant: String, platformOnly: Bool) async throws -> AdminSession? {
        let idle = idleTimeout
        let platform = platformTenant?.rawValue
        return try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                UPDATE admin_sessions SET last_seen_at = now()
                WHERE tenant_id = \(tenant) AND session_hash = \(hasher.hash(cookie)) AND ended_at IS NULL AND expires_at > now()
                  AND last_seen_at > now() - make_interval(secs => \(idle))
                  AND (NOT \(platformOnly) OR client_tenant_id = \(platform))
                RETURNING client_id, client_tenant_id
                """, logger: database.logger)
            for try await (clientID, clientTenant) in rows.decode((String, String).self) {
                return AdminSession(storedIn: tenant, id: cookie, clientID: clientID, clientTenant: clientTenant)
            }
            return nil
        }
    }

    /// Starts a session in `tenant` for an admin client, ending the one the browser held there; the new id.
    func start(
        clientID: String, clientTenant: String, tenant: String, replacing old: String?,
        on connection: PostgresConnection
    ) async throws -> String {
        if let old, CSRFGuard.isWellFormed(old) {
            try await end(old, on: connection)
        }
        let id = SecretTokens.generate()
        let expires = Date().addingTimeInterval(absoluteLifetime)
        try await connection.query(
            """
            INSERT INTO admin_sessions (tenant_id, session_hash, client_id, client_tenant_id, expires_at)
            VALUES (\(tenant), \(hasher.hash(id)), \(clientID), \(clientTenant), \(expires))
            """, logger: database.logger)
        return id
    }

    /// Signs out: the session stops working at once.
    func end(_ session: AdminSession) async throws {
        try await database.withTenantTransaction(session.storedIn) { try await end(session.id, on: $0) }
    }

    private func end(_ id: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE admin_sessions SET ended_at = now() WHERE session_hash = \(hasher.hash(id)) AND ended_at IS NULL",
            logger: database.logger)
    }

    /// Remembers the outcome of a form post for the page the redirect leads to.
    func setFlash(_ message: String, for session: AdminSession) async throws {
        let text = String(message.prefix(1000))
        try await database.withTenantTransaction(session.storedIn) { connection in
            try await connection.query(
                "UPDATE admin_sessions SET flash = \(text) WHERE tenant_id = \(session.storedIn) AND session_hash = \(hasher.hash(session.id))",
                logger: database.logger)
        }
    }

    /// The pending flash message, cleared so a reload does not show it again.
    func takeFlash(for session: AdminSession) async throws -> String? {
        try await database.withTenantTransaction(session.storedIn) { connection in
            let rows = try await connection.query(
                """
                UPDATE admin_sessions s SET flash = NULL FROM (
                    SELECT tenant_id, session_hash, flash FROM admin_sessions
                    WHERE tenant_id = \(session.storedIn) AND session_hash = \(hasher.hash(session.id)) FOR UPDATE
                ) old
                WHERE s.tenant_id = old.tenant_id AND s.session_hash = old.session_hash AND old.flash IS NOT NULL
                RETURNING old.flash
                """, logger: database.logger)
            for try await flash in rows.decode(String?.self) { return flash }
            return nil
        }
    }
}
