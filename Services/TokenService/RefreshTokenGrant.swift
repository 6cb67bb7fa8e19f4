import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// RFC 6749 §6 with rotation and reuse detection (Security BCP §4.14): a rotated token presented again
/// revokes its whole family. Public clients' tokens are bound to the DPoP key that obtained them.
struct RefreshTokenGrant: Sendable {
    let issuer: TokenIssuer
    let revocation: TokenRevocation
    let database: Database
    let dpop: TokenEndpointDPoP

    /// A refresh token's row: what it was issued with, and its status.
    @dynamicMemberLookup
    private struct StoredRefresh {
        let contents: RefreshTokenContents
        let clientID: String
        let status: String
        let rotatedAt: Date?
        /// Whether the user may still obtain tokens, where the read included it.
        var userActive = true

        subscript<Value>(dynamicMember field: KeyPath<RefreshTokenContents, Value>) -> Value {
            contents[keyPath: field]
        }

        init(row: (UUID, Int, String, UUID?, String, String?, String, Date, Date?), userActive: Bool = true) {
            contents = RefreshTokenContents(
                familyID: row.0, generation: row.1, userID: row.3, scope: row.4, dpopJKT: row.5, expiresAt: row.7)
            clientID = row.2
            status = row.6
            rotatedAt = row.8
            self.userActive = userActive
        }

        init(sealed contents: RefreshTokenContents, clientID: String) {
            self.contents = contents
            self.clientID = clientID
            status = "active"
            rotatedAt = nil
        }
    }

    private enum Outcome {
        case issued(TokenResponse)
        case reused
    }

    func grant(_ grant: GrantContext, signer: (kid: String, key: SigningKey)) async throws -> TokenResponse {
        guard let token = grant.form["refresh_token"] else {
            throw OAuthError.invalidRequest("refresh_token is required")
        }
        let tokenHash = issuer.hasher.hash(token)
        if let response = try await rotateUsual(grant, token: token, tokenHash: tokenHash, signer: signer) {
            return response
        }
        // Only the rotation's statement re-checks a cached client record: anything else is decided on the
        // database's record.
        if grant.client.fromCache { throw ClientNoLongerUsable() }
        let logger = database.logger
        let outcome: Outcome = try await database.withTenantTransaction(grant.tenant.id) { connection in
            guard let stored = try await find(tokenHash, on: connection, logger: logger),
                stored.clientID == grant.client.clientID
            else { throw OAuthError.invalidGrant("refresh token is invalid") }
            switch stored.status {
            case "rotated":
                if let response = try await graceRefresh(
                    stored, token: token, grant: grant, signer: signer, on: connection)
                {
                    return .issued(response)
                }
                try await reuseDetected(stored, grant: grant, on: connection, logger: logger)
                return .reused
            case "active": break
            default: throw OAuthError.invalidGrant("refresh token has been revoked")
            }
            guard stored.expiresAt > Date() else { throw OAuthError.invalidGrant("refresh token has expired") }
            if let bound = stored.dpopJKT {
                guard let proof = grant.proof else {
                    throw dpop.error(
                        .invalidProof("this refresh token is DPoP-bound: a proof is required"), tenant: grant.tenant)
                }
                guard ConstantTime.equals(bound, proof.jkt) else {
                    throw dpop.error(
                        .invalidProof("proof key does not match the refresh token's key"), tenant: grant.tenant)
                }
            }
            let request = try rotation(of: stored, token: token, grant: grant)
            if let userID = stored.userID, try await !UserStatus.isActive(userID, on: connection, logger: logger) {
                throw OAuthError.invalidGrant("the user cannot sign in")
            }
            try await connection.query(
                "UPDATE refresh_tokens SET status = 'rotated', rotated_at = now() WHERE token_hash = \(tokenHash)",
                logger: logger)
            return .issued(
                try await issuer.issue(
                    request, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer, on: connection,
                    logger: logger))
        }
        switch outcome {
        case .issued(let response): return response
        case .reused: throw OAuthError.invalidGrant("refresh token has already been used")
        }
    }

    /// The usual rotation (an active token of this client, the user active, the proof key it is bound to, a
    /// scope within the original) in one statement that rotates the token only while it is still active and of
    /// the generation it carries. What the checks need comes from the token itself when it is a sealed token of
    /// this client, otherwise from a read of its row without a lock. Nil whenever anything else applies (reuse,
    /// the grace window, an error to report); the caller then decides in one transaction.
    private func rotateUsual(
        _ grant: GrantContext, token: String, tokenHash: String, signer: (kid: String, key: SigningKey)
    ) async throws -> TokenResponse? {
        let stored: StoredRefresh
        if let sealed = issuer.refreshTokens.open(token, tenant: grant.tenant.id, clientID: grant.client.clientID) {
            stored = StoredRefresh(sealed: sealed, clientID: grant.client.clientID)
        } else {
            guard let read = try await state(tokenHash, tenant: grant.tenant.id) else { return nil }
            stored = read
        }
        guard stored.userActive, stored.status == "active", stored.clientID == grant.client.clientID,
            stored.expiresAt > Date()
        else { return nil }
        if let bound = stored.dpopJKT {
            guard let proof = grant.proof, ConstantTime.equals(bound, proof.jkt) else { return nil }
        }
        guard let request = try? rotation(of: stored, token: token, grant: grant) else { return nil }
        return try await issuer.rotateRefreshToken(
            request, rotating: tokenHash, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer,
            database: database)
    }

    /// What rotating `stored` issues: the scope asked for (within the original grant's) or the original one, and
    /// the family's next refresh token, bound to the same key.
    private func rotation(of stored: StoredRefresh, token: String, grant: GrantContext) throws -> IssuanceRequest {
        let original = TenantPolicy.scopeTokens(stored.scope)
        var scopes = original
        if let requested = grant.form["scope"] {
            scopes = TenantPolicy.scopeTokens(requested)
            guard !scopes.isEmpty, scopes.allSatisfy(original.contains) else {
                throw OAuthError.invalidScope("requested scope exceeds the original grant")
            }
        }
        return IssuanceRequest(
            client: grant.client, userID: stored.userID, scopes: scopes, grantType: .refreshToken,
            jkt: grant.proof?.jkt,
            refresh: RefreshPlan(
                familyID: stored.familyID, generation: stored.generation + 1, expiresAt: stored.expiresAt,
                boundJKT: stored.dpopJKT, successorOf: token))
    }

    /// Concurrent refresh: the token was rotated moments ago and comes again with the same DPoP key. Answers
    /// with a new access token and the same successor while that successor is still unused; nil otherwise
    /// (then it is reuse). Unbound tokens get no grace: nothing proves the second request is the same app.
    private func graceRefresh(
        _ stored: StoredRefresh, token: String, grant: GrantContext, signer: (kid: String, key: SigningKey),
        on connection: PostgresConnection
    ) async throws -> TokenResponse? {
        let logger = database.logger
        let grace = grant.tenant.policy.tokenLifetimes.refreshGrace
        guard grace > 0, let rotatedAt = stored.rotatedAt, Date().timeIntervalSince(rotatedAt) <= TimeInterval(grace),
            let bound = stored.dpopJKT, let proof = grant.proof, ConstantTime.equals(bound, proof.jkt),
            grant.form["scope"] == nil, stored.expiresAt > Date()
        else { return nil }
        guard let (successorRow, next) = try await successor(of: stored, token: token, grant: grant, on: connection),
            successorRow.status == "active"
        else { return nil }
        if let userID = stored.userID, try await !UserStatus.isActive(userID, on: connection, logger: logger) {
            throw OAuthError.invalidGrant("the user cannot sign in")
        }
        let request = IssuanceRequest(
            client: grant.client, userID: stored.userID, scopes: TenantPolicy.scopeTokens(successorRow.scope),
            grantType: .refreshToken, jkt: proof.jkt, refresh: nil, familyID: stored.familyID)
        var response = try await issuer.issue(
            request, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer, on: connection, logger: logger)
        response.refreshToken = next
        return response
    }

    /// The successor `stored` was rotated to, and its value: derived from `token` (the successor of a token is
    /// always the same), recognised by its keyed hash.
    private func successor(
        of stored: StoredRefresh, token: String, grant: GrantContext, on connection: PostgresConnection
    ) async throws -> (StoredRefresh, String)? {
        let rows = try await connection.query(
            """
            SELECT family_id, generation, client_id, user_id, scope, dpop_jkt, status, expires_at, rotated_at, token_hash
            FROM refresh_tokens WHERE family_id = \(stored.familyID) AND generation = \(stored.generation + 1) FOR UPDATE
            """, logger: database.logger)
        for try await row in rows.decode((UUID, Int, String, UUID?, String, String?, String, Date, Date?, String).self)
        {
            let successor = StoredRefresh(row: (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8))
            let sealed = issuer.refreshToken(
                RefreshPlan(
                    familyID: successor.familyID, generation: successor.generation, expiresAt: successor.expiresAt,
                    boundJKT: successor.dpopJKT, successorOf: token),
                userID: successor.userID, scope: successor.scope, tenant: grant.tenant.id, clientID: successor.clientID)
            for candidate in [sealed, issuer.unsealedSuccessor(of: token)]
            where ConstantTime.equals(issuer.hasher.hash(candidate), row.9) {
                return (successor, candidate)
            }
        }
        return nil
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
            refreshFamilyID: stored.familyID.lowercasedString, jkt: grant.proof?.jkt,
            sourceAddress: grant.sourceAddress, familyRevoked: true, actor: actor)
        try await revocation.outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
    }

    /// The token's state read in one statement, outside any transaction.
    private func state(_ tokenHash: String, tenant: String) async throws -> StoredRefresh? {
        try await database.withStatementTransaction(tenant: tenant) {
            let rows = try await database.client.execute(
                RefreshTokenStateStatement(tenant: tenant, tokenHash: tokenHash), logger: database.logger)
            for try await row in rows {
                return StoredRefresh(
                    row: (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8), userActive: row.9)
            }
            return nil
        }
    }

    private func find(_ tokenHash: String, on connection: PostgresConnection, logger: Logger) async throws
        -> StoredRefresh?
    {
        let rows = try await connection.query(
            """
            SELECT family_id, generation, client_id, user_id, scope, dpop_jkt, status, expires_at, rotated_at
            FROM refresh_tokens WHERE token_hash = \(tokenHash) FOR UPDATE
            """, logger: logger)
        for try await row in rows.decode((UUID, Int, String, UUID?, String, String?, String, Date, Date?).self) {
            return StoredRefresh(row: row)
        }
        return nil
    }
}
