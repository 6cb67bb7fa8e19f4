import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Looks up what the token service knows about a presented token: a self-issued access token (JWT
/// verified against the tenant's keys, plus its `issued_access_tokens` row) or a refresh token.
struct TokenLookup: Sendable {
    let keyStore: TenantKeyStore
    let hasher: KeyedHasher

    /// A live access token: signature, issuer, expiry, not revoked, its client still active.
    struct LiveAccessToken: Sendable {
        let claims: AccessTokenClaims
        let userID: UUID?
        let familyID: UUID?
    }

    /// A refresh token as stored.
    struct StoredRefreshToken: Sendable {
        let familyID: UUID
        let clientID: String
        let userID: UUID?
        let scope: String
        let status: String
        let expiresAt: Date
        let createdAt: Date
        var isActive: Bool { status == "active" && expiresAt > Date() }
    }

    /// The claims of `token` if it is one of this tenant's access tokens, whatever its audience; nil otherwise.
    func accessTokenClaims(_ token: String, endpoints: TenantEndpoints) async throws -> AccessTokenClaims? {
        guard let parsed = try? AccessTokenVerifier.parse(token), parsed.claims.iss == endpoints.issuer else {
            return nil
        }
        let keys = try await keyStore.publishedKeys(tenant: endpoints.tenant).map(\.jwk)
        // The audience check is the caller's.
        return try? AccessTokenVerifier.check(parsed, keys: keys, audience: { _ in true })
    }

    /// The stored record behind a verified access token, when it is neither revoked nor from an inactive client
    /// nor of a user who may no longer sign in.
    func liveAccessToken(
        _ claims: AccessTokenClaims, on connection: PostgresConnection, logger: Logger
    ) async throws -> LiveAccessToken? {
        let rows = try await connection.query(
            """
            SELECT t.user_id, t.family_id FROM issued_access_tokens t
            JOIN clients c ON c.tenant_id = t.tenant_id AND c.client_id = t.client_id
            WHERE t.jti = \(claims.jti) AND t.client_id = \(claims.clientID) AND t.revoked_at IS NULL
              AND t.expires_at > now() AND c.status = 'active'
              AND (c.client_secret_expires_at IS NULL OR c.client_secret_expires_at > now())
              AND (t.user_id IS NULL OR EXISTS (
                SELECT 1 FROM users u WHERE u.tenant_id = t.tenant_id AND u.user_id = t.user_id AND u.status = 'active'))
            """, logger: logger)
        for try await (userID, familyID) in rows.decode((UUID?, UUID?).self) {
            return LiveAccessToken(claims: claims, userID: userID, familyID: familyID)
        }
        return nil
    }

    func refreshToken(_ token: String, on connection: PostgresConnection, logger: Logger) async throws
        -> StoredRefreshToken?
    {
        let rows = try await connection.query(
            """
            SELECT family_id, client_id, user_id, scope, status, expires_at, created_at
            FROM refresh_tokens WHERE token_hash = \(hasher.hash(token))
            """, logger: logger)
        for try await row in rows.decode((UUID, String, UUID?, String, String, Date, Date).self) {
            return StoredRefreshToken(
                familyID: row.0, clientID: row.1, userID: row.2, scope: row.3, status: row.4, expiresAt: row.5,
                createdAt: row.6)
        }
        return nil
    }
}
