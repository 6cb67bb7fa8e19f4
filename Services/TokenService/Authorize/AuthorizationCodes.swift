import Foundation
import LatchkeyCore
import LatchkeyServer
import Logging
import PostgresNIO

/// Issues authorization codes: 256 random bits, stored only as a keyed hash with everything the
/// token endpoint checks at redemption (client, redirect URI, user, PKCE challenge, nonce, `dpop_jkt`).
struct AuthorizationCodes: Sendable {
    let hasher: KeyedHasher

    func issue(
        _ request: AuthorizationRequest, userID: UUID, authTime: Date, tenant: ResolvedTenant,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> String {
        let code = SecretTokens.generate()
        let expires = Date().addingTimeInterval(TimeInterval(tenant.policy.tokenLifetimes.authorizationCode))
        try await connection.query(
            """
            INSERT INTO authorization_codes (tenant_id, code_hash, client_id, user_id, redirect_uri, scope,
                code_challenge, code_challenge_method, nonce, dpop_jkt, auth_time, expires_at)
            VALUES (\(tenant.id), \(hasher.hash(code)), \(request.clientID), \(userID), \(request.redirectURI),
                    \(request.scope), \(request.codeChallenge), \(request.codeChallengeMethod), \(request.nonce),
                    \(request.dpopJKT), \(authTime), \(expires))
            """, logger: logger)
        return code
    }
}
