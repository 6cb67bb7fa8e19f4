import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// RFC 6749 §4.1.3 with PKCE (RFC 7636) and DPoP key binding (RFC 9449 §10).
struct AuthorizationCodeGrant: Sendable {
    let issuer: TokenIssuer
    let revocation: TokenRevocation
    let database: Database
    let dpop: TokenEndpointDPoP

    /// A code's row: what it was issued with, and its use.
    @dynamicMemberLookup
    private struct StoredCode {
        let contents: AuthorizationCodeContents
        let clientID: String
        let redirectURI: String
        let consumedAt: Date?
        let issuedFamilyID: UUID?
        let issuedAccessJTI: String?
        /// Whether the user may still obtain tokens, where the read included it.
        var userActive = true

        subscript<Value>(dynamicMember field: KeyPath<AuthorizationCodeContents, Value>) -> Value {
            contents[keyPath: field]
        }
    }

    /// A replay must commit its revocations before the error goes out, so the transaction returns it.
    private enum Outcome {
        case issued(TokenResponse)
        case replayed
    }

    func grant(_ grant: GrantContext, signer: (kid: String, key: SigningKey)) async throws -> TokenResponse {
        guard let code = grant.form["code"] else { throw OAuthError.invalidRequest("code is required") }
        guard let redirectURI = grant.form["redirect_uri"] else {
            throw OAuthError.invalidRequest("redirect_uri is required")
        }
        let verifier = grant.form["code_verifier"]
        let codeHash = issuer.hasher.hash(code)
        if let response = try await redeemUsual(
            grant, code: code, codeHash: codeHash, redirectURI: redirectURI, verifier: verifier, signer: signer)
        {
            return response
        }
        // Only the redemption's statement re-checks a cached client record: anything else is decided on the
        // database's record.
        if grant.client.fromCache { throw ClientNoLongerUsable() }
        let logger = database.logger
        let outcome: Outcome = try await database.withTenantTransaction(grant.tenant.id) { connection in
            guard let stored = try await find(codeHash, on: connection, logger: logger) else {
                throw OAuthError.invalidGrant("authorization code is invalid")
            }
            guard stored.clientID == grant.client.clientID else {
                throw OAuthError.invalidGrant("authorization code was issued to another client")
            }
            if stored.consumedAt != nil {
                try await revokeIssued(by: stored, grant: grant, on: connection, logger: logger)
                return .replayed
            }
            guard stored.expiresAt > Date() else { throw OAuthError.invalidGrant("authorization code has expired") }
            guard stored.redirectURI == redirectURI else {
                throw OAuthError.invalidGrant("redirect_uri does not match")
            }
            try checkPKCE(stored: stored, verifier: verifier, grant: grant)
            if let bound = stored.dpopJKT {
                guard let proof = grant.proof else {
                    throw dpop.error(
                        .invalidProof("this code is bound to a DPoP key: a proof is required"), tenant: grant.tenant)
                }
                guard ConstantTime.equals(bound, proof.jkt) else {
                    throw dpop.error(.invalidProof("proof key does not match dpop_jkt"), tenant: grant.tenant)
                }
            }
            let request = try issuance(of: stored, grant: grant)
            guard try await UserStatus.isActive(stored.userID, on: connection, logger: logger) else {
                throw OAuthError.invalidGrant("the user cannot sign in")
            }
            let response = try await issuer.issue(
                request, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer, on: connection,
                logger: logger)
            let jti = response.accessTokenID
            try await connection.query(
                """
                UPDATE authorization_codes SET consumed_at = now(), issued_family_id = \(request.refresh?.familyID),
                       issued_access_jti = \(jti)
                WHERE code_hash = \(codeHash)
                """, logger: logger)
            return .issued(response)
        }
        switch outcome {
        case .issued(let response): return response
        case .replayed: throw OAuthError.invalidGrant("authorization code has already been used")
        }
    }

    /// The usual redemption (an unused, unexpired code of this client, its redirect URI, PKCE verifier and proof
    /// key, the user active) in one statement that uses the code only while it is still unused and the user
    /// still active. What the checks need comes from the code itself when it is a sealed code of this client and
    /// redirect URI, otherwise from a read of its row without a lock. Nil whenever anything else applies (a
    /// replay, an error to report); the caller then decides in one transaction.
    private func redeemUsual(
        _ grant: GrantContext, code: String, codeHash: String, redirectURI: String, verifier: String?,
        signer: (kid: String, key: SigningKey)
    ) async throws -> TokenResponse? {
        let stored: StoredCode
        if let sealed = issuer.codes.open(
            code, tenant: grant.tenant.id, clientID: grant.client.clientID, redirectURI: redirectURI)
        {
            stored = StoredCode(
                contents: sealed, clientID: grant.client.clientID, redirectURI: redirectURI, consumedAt: nil,
                issuedFamilyID: nil, issuedAccessJTI: nil)
        } else {
            guard let read = try await state(codeHash, tenant: grant.tenant.id) else { return nil }
            stored = read
        }
        guard stored.userActive, stored.consumedAt == nil, stored.clientID == grant.client.clientID,
            stored.expiresAt > Date(), stored.redirectURI == redirectURI,
            (try? checkPKCE(stored: stored, verifier: verifier, grant: grant)) != nil
        else { return nil }
        if let bound = stored.dpopJKT {
            guard let proof = grant.proof, ConstantTime.equals(bound, proof.jkt) else { return nil }
        }
        guard let request = try? issuance(of: stored, grant: grant) else { return nil }
        return try await issuer.redeemAuthorizationCode(
            request, code: codeHash, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer,
            database: database)
    }

    /// What redeeming `stored` issues: its scopes (`dcr` only to the tenant's DCR client, alone), a new refresh
    /// family where the client may refresh, an ID token for `openid`.
    private func issuance(of stored: StoredCode, grant: GrantContext) throws -> IssuanceRequest {
        let scopes = TenantPolicy.scopeTokens(stored.scope)
        if scopes.contains("dcr") {
            guard grant.client.isDCRClient, scopes == ["dcr"] else {
                throw OAuthError.invalidScope("the dcr scope is reserved for the tenant's DCR client, alone")
            }
        }
        let wantsRefresh = grant.client.grantTypes.contains(.refreshToken) && !scopes.contains("dcr")
        let refresh =
            wantsRefresh
            ? RefreshPlan(
                familyID: RandomUUID.make(), generation: 0,
                expiresAt: Date.wholeSeconds(fromNow: grant.tenant.policy.tokenLifetimes.refreshToken),
                boundJKT: grant.refreshBinding)
            : nil
        return IssuanceRequest(
            client: grant.client, userID: stored.userID, scopes: scopes, grantType: .authorizationCode,
            jkt: grant.proof?.jkt, refresh: refresh,
            idToken: scopes.contains("openid") ? IDTokenPlan(nonce: stored.nonce, authTime: stored.authTime) : nil)
    }

    /// The code's state read in one statement, outside any transaction.
    private func state(_ codeHash: String, tenant: String) async throws -> StoredCode? {
        try await database.withStatementTransaction(tenant: tenant) {
            let rows = try await database.client.execute(
                AuthorizationCodeStateStatement(tenant: tenant, codeHash: codeHash), logger: database.logger)
            for try await row in rows {
                return StoredCode(
                    contents: AuthorizationCodeContents(
                        userID: row.1, scope: row.3, challenge: row.4, challengeMethod: row.5, nonce: row.6,
                        dpopJKT: row.7, authTime: row.8, expiresAt: row.9),
                    clientID: row.0, redirectURI: row.2, consumedAt: row.10, issuedFamilyID: nil, issuedAccessJTI: nil,
                    userActive: row.11)
            }
            return nil
        }
    }

    private func checkPKCE(stored: StoredCode, verifier: String?, grant: GrantContext) throws {
        guard let challenge = stored.challenge else {
            // A verifier for a code issued without a challenge is refused (PKCE downgrade, RFC 9700 §2.1.1).
            guard verifier == nil else {
                throw OAuthError.invalidGrant("code_verifier sent for a code without a challenge")
            }
            let required = grant.tenant.policy.pkce.isRequired(
                clientType: grant.client.clientType, applicationType: grant.client.applicationType)
            guard !required else { throw OAuthError.invalidGrant("PKCE is required for this client") }
            return
        }
        guard let verifier else { throw OAuthError.invalidGrant("code_verifier is required") }
        guard let method = PKCE.Method(rawValue: stored.challengeMethod ?? "S256") else {
            throw OAuthError.invalidGrant("unsupported code_challenge_method")
        }
        do {
            try PKCE.verify(
                verifier: verifier, challenge: challenge, method: method,
                allowPlain: grant.tenant.policy.pkce.allowPlain)
        } catch {
            throw OAuthError.invalidGrant("code_verifier does not match the code challenge")
        }
    }

    /// RFC 6749 §4.1.2: a code used twice revokes every token it produced.
    private func revokeIssued(
        by stored: StoredCode, grant: GrantContext, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let actor = EventActor.system("authorization-code-replay")
        if let family = stored.issuedFamilyID {
            try await revocation.revokeFamily(
                family, tenant: grant.tenant, clientID: stored.clientID, userID: stored.userID,
                reason: .authorizationCodeReplay, actor: actor, on: connection, logger: logger)
        }
        if let jti = stored.issuedAccessJTI {
            try await revocation.revokeAccessToken(
                jti: jti, tenant: grant.tenant, clientID: stored.clientID, userID: stored.userID,
                reason: .authorizationCodeReplay, actor: actor, on: connection, logger: logger)
        }
    }

    private func find(_ codeHash: String, on connection: PostgresConnection, logger: Logger) async throws -> StoredCode?
    {
        let rows = try await connection.query(
            """
            SELECT client_id, user_id, redirect_uri, scope, code_challenge, code_challenge_method, nonce, dpop_jkt,
                   auth_time, expires_at, consumed_at, issued_family_id, issued_access_jti
            FROM authorization_codes WHERE code_hash = \(codeHash) FOR UPDATE
            """, logger: logger)
        for try await row in rows.decode(
            (String, UUID, String, String, String?, String?, String?, String?, Date, Date, Date?, UUID?, String?).self)
        {
            return StoredCode(
                contents: AuthorizationCodeContents(
                    userID: row.1, scope: row.3, challenge: row.4, challengeMethod: row.5, nonce: row.6, dpopJKT: row.7,
                    authTime: row.8, expiresAt: row.9),
                clientID: row.0, redirectURI: row.2, consumedAt: row.10, issuedFamilyID: row.11,
                issuedAccessJTI: row.12)
        }
        return nil
    }
}
