import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// The sign-in session behind the `latchkey_session` cookie: a random value in the browser, only its
/// keyed hash in `sso_sessions`, a new value on every sign-in (no session fixation).
struct SSOSessions: Sendable {
    static let cookieName = "latchkey_session"
    let hasher: KeyedHasher

    /// The signed-in user of a live session, if the cookie names one and the user may still sign in.
    func current(
        _ cookie: String?, on connection: PostgresConnection, logger: Logger
    ) async throws -> (userID: UUID, authTime: Date)? {
        guard let cookie, cookie.utf8.count <= 128 else { return nil }
        let rows = try await connection.query(
            """
            SELECT s.user_id, s.auth_time FROM sso_sessions s JOIN users u USING (tenant_id, user_id)
            WHERE s.session_hash = \(hasher.hash(cookie)) AND s.revoked_at IS NULL AND s.expires_at > now()
              AND u.status = 'active'
            """, logger: logger)
        for try await (userID, authTime) in rows.decode((UUID, Date).self) { return (userID, authTime) }
        return nil
    }

    /// Starts a session for `userID`, ending the one the browser held; returns the new cookie value.
    func start(
        userID: UUID, tenant: String, replacing old: String?, lifetime: Int, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> String {
        if let old, old.utf8.count <= 128 {
            try await connection.query(
                "UPDATE sso_sessions SET revoked_at = now() WHERE session_hash = \(hasher.hash(old)) AND revoked_at IS NULL",
                logger: logger)
        }
        let value = SecretTokens.generate()
        let expires = Date().addingTimeInterval(TimeInterval(lifetime))
        try await connection.query(
            """
            INSERT INTO sso_sessions (tenant_id, session_hash, user_id, auth_time, expires_at)
            VALUES (\(tenant), \(hasher.hash(value)), \(userID), now(), \(expires))
            """, logger: logger)
        // Every interactive sign-in (password, sign-up, upstream provider) starts a session here.
        try await connection.query(
            "UPDATE users SET last_login_at = now() WHERE user_id = \(userID)", logger: logger)
        return value
    }

    /// Ends the session the cookie names (RP-Initiated Logout); nothing when there is none.
    func end(_ cookie: String?, on connection: PostgresConnection, logger: Logger) async throws {
        guard let cookie, cookie.utf8.count <= 128 else { return }
        try await connection.query(
            "UPDATE sso_sessions SET revoked_at = now() WHERE session_hash = \(hasher.hash(cookie)) AND revoked_at IS NULL",
            logger: logger)
    }
}
