import Foundation
import Logging
import PostgresNIO
import Shared

/// RFC 6749 §6 with rotation and reuse detection (Security BCP §4.14): a rotated token presented again
/// revokes its whole family. Public clients' tokens are bound to the DPoP key that obtained them.
struct RefreshTokenGrant: Sendable {
    let issuer: TokenIssuer
    let revocation: TokenRevocation
    let database: Database
    let dpop: TokenEndpointDPoP

    private struct StoredRefresh {
        let familyID: UUID
        let generation: Int
        let clientID: String
        let userID: UUID?
        let scope: String
        let dpopJKT: String?
        let status: String
        let expiresAt: Date
    }

    private enum Outcome {
        case issued(TokenResponse)
        case reused
    }

    func grant(_ grant: GrantContext, signer: (kid: String, key: SigningKey)) async throws -> TokenResponse {
        guard let token = grant.form["refresh_token"] else { throw OAuthError.invalidRequest("refresh_token is required") }
        let tokenHash = issuer.hasher.hash(token)
        let logger = database.logger
        let outcome: Outcome = try await database.withTenantTransaction(grant.tenant.id) { connection in
            guard let stored = try await find(tokenHash, on: connection, logger: logger),
                stored.clientID == grant.client.clientID
            else { throw OAuthError.invalidGrant("refresh token is invalid") }
            switch stored.status {
            case "rotated":
                try await reuseDetected(stored, grant: grant, on: connection, logger: logger)
                return .reused
            case "active": break
            default: throw OAuthError.invalidGrant("refresh token has been revoked")
            }
            guard stored.expiresAt > Date() else { throw OAuthError.invalidGrant("refresh token has expired") }
            if let bound = stored.dpopJKT {
                guard let proof = grant.proof else {
                    throw dpop.error(.invalidProof("this refresh token is DPoP-bound: a proof is required"), tenant: grant.tenant)
                }
                guard ConstantTime.equals(bound, proof.jkt) else {
                    throw dpop.error(.invalidProof("proof key does not match the refresh token's key"), tenant: grant.tenant)
                }
            }
            let original = TenantPolicy.scopeTokens(stored.scope)
            var scopes = original
            if let requested = grant.form["scope"] {
                scopes = TenantPolicy.scopeTokens(requested)
                guard !scopes.isEmpty, scopes.allSatisfy(original.contains) else {
                    throw OAuthError.invalidScope("requested scope exceeds the original grant")
                }
            }
            if let userID = stored.userID, try await !userIsActive(userID, on: connection, logger: logger) {
                throw OAuthError.invalidGrant("the user cannot sign in")
            }
            try await connection.query(
                "UPDATE refresh_tokens SET status = 'rotated', rotated_at = now() WHERE token_hash = \(tokenHash)",
                logger: logger)
            let request = IssuanceRequest(
                client: grant.client, userID: stored.userID, scopes: scopes, grantType: .refreshToken,
                jkt: grant.proof?.jkt,
                refresh: RefreshPlan(
                    familyID: stored.familyID, generation: stored.generation + 1, expiresAt: stored.expiresAt,
                    boundJKT: stored.dpopJKT))
            return .issued(try await issuer.issue(
                request, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer, on: connection, logger: logger))
        }
        switch outcome {
        case .issued(let response): return response
        case .reused: throw OAuthError.invalidGrant("refresh token has already been used")
        }
    }

    private func reuseDetected(
        _ stored: StoredRefresh, grant: GrantContext, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let actor = EventActor.system("refresh-token-reuse-detection")
        try await revocation.revokeFamily(
            stored.familyID, tenant: grant.tenant, clientID: stored.clientID, userID: stored.userID,
            reason: .refreshTokenReuse, actor: actor, on: connection, logger: logger)
        let event = RefreshTokenReuseDetected(
            tenant: grant.tenant.slug, clientID: stored.clientID, userID: stored.userID,
            refreshFamilyID: stored.familyID.uuidString.lowercased(), jkt: grant.proof?.jkt,
            sourceAddress: grant.sourceAddress, familyRevoked: true, actor: actor)
        try await revocation.outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
    }

    private func find(_ tokenHash: String, on connection: PostgresConnection, logger: Logger) async throws -> StoredRefresh? {
        let rows = try await connection.query(
            """
            SELECT family_id, generation, client_id, user_id, scope, dpop_jkt, status, expires_at
            FROM refresh_tokens WHERE token_hash = \(tokenHash) FOR UPDATE
            """, logger: logger)
        for try await row in rows.decode((UUID, Int, String, UUID?, String, String?, String, Date).self) {
            return StoredRefresh(
                familyID: row.0, generation: row.1, clientID: row.2, userID: row.3, scope: row.4, dpopJKT: row.5,
                status: row.6, expiresAt: row.7)
        }
        return nil
    }
}
