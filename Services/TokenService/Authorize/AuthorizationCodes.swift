import Foundation
import LatchkeyCore
import LatchkeyServer
import Logging
import PostgresNIO

/// Issues authorization codes: what the token endpoint checks at redemption (user, scope, PKCE challenge, nonce,
/// `dpop_jkt`, times) sealed into the code, bound to its client, redirect URI and tenant, and stored only as a
/// keyed hash with the same fields, the row that records its single use.
struct AuthorizationCodes: Sendable {
    let hasher: KeyedHasher
    let sealer: AuthorizationCodeSealer

    init(hasher: KeyedHasher) {
        self.hasher = hasher
        sealer = AuthorizationCodeSealer(hasher: hasher)
    }

    func issue(
        _ request: AuthorizationRequest, userID: UUID, authTime: Date, tenant: ResolvedTenant,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> String {
        let expires = Date.wholeSeconds(fromNow: tenant.policy.tokenLifetimes.authorizationCode)
        let contents = AuthorizationCodeContents(
            userID: userID, scope: request.scope, challenge: request.codeChallenge,
            challengeMethod: request.codeChallengeMethod, nonce: request.nonce, dpopJKT: request.dpopJKT,
            authTime: authTime, expiresAt: expires)
        let code =
            sealer.seal(contents, tenant: tenant.id, clientID: request.clientID, redirectURI: request.redirectURI)
            ?? SecretTokens.generate()
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
