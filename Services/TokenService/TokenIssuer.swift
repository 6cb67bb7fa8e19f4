import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// What one grant response is made of, before anything is signed or stored.
struct IssuanceRequest: Sendable {
    var client: StoredClient
    var userID: UUID?
    var scopes: [String]
    var grantType: GrantType
    /// Thumbprint of the DPoP key of this request (`cnf.jkt`); nil for Bearer tokens.
    var jkt: String?
    /// Refresh token to issue, if any.
    var refresh: RefreshPlan?
    /// The refresh family the access token belongs to when no refresh token is issued with it (a retry
    /// inside the rotation grace window), so revoking the family revokes it too.
    var familyID: UUID? = nil
    /// ID token inputs when `openid` was granted to a user.
    var idToken: IDTokenPlan?
}

/// A refresh token to create: a new family (first grant) or the next generation of an existing one.
struct RefreshPlan: Sendable {
    var familyID: UUID
    var generation: Int
    /// Absolute family expiry, counted from the first grant.
    var expiresAt: Date
    /// The DPoP key the refresh token is bound to (public clients).
    var boundJKT: String?
    /// The token this one succeeds (a rotation): the successor is derived from it, so the same rotation always
    /// yields the same token. Nil for the first token of a family.
    var successorOf: String? = nil
}

struct IDTokenPlan: Sendable {
    var nonce: String?
    var authTime: Date
}

/// The RFC 6749 §5.1 success body.
struct TokenResponse: Encodable, Sendable {
    var accessToken: String
    var tokenType: String
    var expiresIn: Int
    var scope: String
    var refreshToken: String?
    var idToken: String?
    /// `jti` of the access token; kept for the grant's own records, never serialised.
    var accessTokenID: String

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case scope
        case refreshToken = "refresh_token"
        case idToken = "id_token"
    }
}

extension TokenResponse: CompactJSONObject {
    func writeMembers(to object: inout CompactJSONObjectWriter) {
        object.member("access_token", accessToken)
        object.member("expires_in", expiresIn)
        object.member("id_token", idToken)
        object.member("refresh_token", refreshToken)
        object.member("scope", scope)
        object.member("token_type", tokenType)
    }
}

/// Signs access and ID tokens, stores their records and refresh tokens, and writes `TokenIssued` —
/// all on the caller's open transaction, so the grant's state change and its event commit together.
struct TokenIssuer: Sendable {
    let hasher: KeyedHasher
    let outbox: OutboxWriter
    let usage: ClientUsageRecorder
    /// Opens the authorization codes the authorization endpoint seals.
    let codes: AuthorizationCodeSealer
    let refreshTokens: RefreshTokenSealer

    init(hasher: KeyedHasher, outbox: OutboxWriter, usage: ClientUsageRecorder) {
        self.hasher = hasher
        self.outbox = outbox
        self.usage = usage
        codes = AuthorizationCodeSealer(hasher: hasher)
        refreshTokens = RefreshTokenSealer(hasher: hasher)
    }

    /// The refresh token `plan` creates for `clientID`, with the scope the grant issues: its state sealed into
    /// it. Only a state too long to seal gets a token of random bits (or, for a successor, one derived from
    /// its predecessor with the keyed hash), whose rotation reads the row.
    func refreshToken(_ plan: RefreshPlan, userID: UUID?, scope: String, tenant: String, clientID: String) -> String {
        let contents = RefreshTokenContents(
            familyID: plan.familyID, generation: plan.generation, userID: userID, scope: scope,
            dpopJKT: plan.boundJKT, expiresAt: plan.expiresAt)
        if let sealed = refreshTokens.seal(contents, tenant: tenant, clientID: clientID, successorOf: plan.successorOf)
        {
            return sealed
        }
        return plan.successorOf.map(unsealedSuccessor(of:)) ?? SecretTokens.generate()
    }

    /// The successor of a refresh token whose successor could not be sealed, derived with the keyed hash
    /// (unguessable without the server's key).
    func unsealedSuccessor(of token: String) -> String {
        hasher.hash("refresh-successor|" + token)
    }

    /// A signed access token and what its record and event need.
    private struct SignedAccessToken {
        let token: String
        let jti: String
        let scopes: [String]
        let scope: String
        let audience: String
        let lifetime: Int
        let issuedAt: Int64
        let expiresAt: Date
    }

    func issue(
        _ request: IssuanceRequest, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey), on connection: PostgresConnection, logger: Logger
    ) async throws -> TokenResponse {
        let access = try signAccessToken(request, tenant: tenant, endpoints: endpoints, signer: signer)
        try await connection.query(
            """
            INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, family_id, expires_at)
            VALUES (\(tenant.id), \(access.jti), \(request.client.clientID), \(request.userID), \(request.refresh?.familyID ?? request.familyID), \(access.expiresAt))
            """, logger: logger)

        var refreshToken: String?
        if let plan = request.refresh {
            let token = self.refreshToken(
                plan, userID: request.userID, scope: access.scope, tenant: tenant.id, clientID: request.client.clientID)
            try await connection.query(
                """
                INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, generation, client_id, user_id, scope, dpop_jkt, expires_at)
                VALUES (\(tenant.id), \(hasher.hash(token)), \(plan.familyID), \(plan.generation), \(request.client.clientID),
                        \(request.userID), \(access.scope), \(plan.boundJKT), \(plan.expiresAt))
                """, logger: logger)
            refreshToken = token
        }

        let idToken = try signIDToken(request, access: access, tenant: tenant, endpoints: endpoints, signer: signer)
        try await outbox.append(
            event(request, tenant: tenant, access: access, refreshToken: refreshToken, idToken: idToken),
            on: connection, logger: logger)
        usage.record(tenant: tenant.id, clientID: request.client.clientID)
        return response(request, access: access, refreshToken: refreshToken, idToken: idToken)
    }

    /// Issues an access token alone (no refresh or ID token) in one statement, its own transaction: the
    /// token's record and its `TokenIssued` row, written only while the client is still active, the secret
    /// it authenticated with still authenticates it (current, or previous within its overlap) and its
    /// metadata is still the one the decision was made on. A client revoked (or whose secret changed) since
    /// its record was read gets `invalid_client`.
    func issueAccessToken(
        _ request: IssuanceRequest, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey), database: Database
    ) async throws -> TokenResponse {
        precondition(request.refresh == nil && request.idToken == nil, "one-statement issuance is access-only")
        let client = request.client
        let response = try await issueInOneStatement(
            request, tenant: tenant, endpoints: endpoints, signer: signer, database: database
        ) { access, row, _ in
            IssueAccessTokenStatement(
                tenant: tenant.id, client: client, jti: access.jti, userID: request.userID, familyID: request.familyID,
                expiresAt: access.expiresAt, event: row, relayWokenByCaller: outbox.relayWokenByCaller)
        }
        guard let response else { throw ClientNoLongerUsable() }
        return response
    }

    /// Rotates the refresh token `tokenHash` (of generation `request.refresh.generation - 1`) to its successor
    /// and issues an access token with it, in one statement, its own transaction: the
    /// old token marked rotated, the new one, the access token's record and its `TokenIssued` row, written only
    /// while the old token is still active and of that generation, the user active and the client still
    /// grantable as read. Nil, with nothing written, when any of that no longer holds.
    func rotateRefreshToken(
        _ request: IssuanceRequest, rotating tokenHash: String, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey), database: Database
    ) async throws -> TokenResponse? {
        guard let plan = request.refresh, plan.successorOf != nil, request.idToken == nil else {
            preconditionFailure("a rotation issues a derived refresh token and no ID token")
        }
        let client = request.client
        return try await issueInOneStatement(
            request, tenant: tenant, endpoints: endpoints, signer: signer, database: database
        ) { access, row, newHash in
            RotateRefreshTokenStatement(
                tenant: tenant.id, client: client, userID: request.userID, oldTokenHash: tokenHash,
                oldGeneration: plan.generation - 1, newTokenHash: newHash, plan: plan, scope: access.scope,
                jti: access.jti, accessExpiresAt: access.expiresAt, event: row,
                relayWokenByCaller: outbox.relayWokenByCaller)
        }
    }

    /// Uses up the authorization code `codeHash` and issues what it grants (access token, the first refresh
    /// token of a new family when planned, ID token) in one statement, its own transaction: the code marked
    /// used with what it issued, the access token's record, the refresh token and the `TokenIssued` row,
    /// written only while the code is still unused and unexpired, the user active and the client still
    /// grantable as read. Nil, with nothing written, when any of that no longer holds.
    func redeemAuthorizationCode(
        _ request: IssuanceRequest, code codeHash: String, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey), database: Database
    ) async throws -> TokenResponse? {
        precondition(request.refresh?.generation ?? 0 == 0, "a code starts a refresh family")
        let plan = request.refresh
        let client = request.client
        return try await issueInOneStatement(
            request, tenant: tenant, endpoints: endpoints, signer: signer, database: database
        ) { access, row, refreshHash in
            RedeemAuthorizationCodeStatement(
                tenant: tenant.id, client: client, userID: request.userID, codeHash: codeHash,
                refreshTokenHash: refreshHash, plan: plan, scope: access.scope, jti: access.jti,
                accessExpiresAt: access.expiresAt, event: row, relayWokenByCaller: outbox.relayWokenByCaller)
        }
    }

    /// Signs what `request` issues, then runs `statement` (a function returning whether it wrote the grant; given
    /// the access token, the event's row and the refresh token's hash) as its own transaction; the response, or
    /// nil when the statement wrote nothing.
    private func issueInOneStatement<Statement: PostgresPreparedStatement>(
        _ request: IssuanceRequest, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey), database: Database,
        statement: (SignedAccessToken, OutboxRow, String?) -> Statement
    ) async throws -> TokenResponse? where Statement.Row == Bool {
        let access = try signAccessToken(request, tenant: tenant, endpoints: endpoints, signer: signer)
        let refreshToken = request.refresh.map {
            self.refreshToken(
                $0, userID: request.userID, scope: access.scope, tenant: tenant.id, clientID: request.client.clientID)
        }
        let idToken = try signIDToken(request, access: access, tenant: tenant, endpoints: endpoints, signer: signer)
        let row = try outbox.row(
            for: event(request, tenant: tenant, access: access, refreshToken: refreshToken, idToken: idToken))
        let call = statement(access, row, refreshToken.map(hasher.hash))
        let written = try await database.withStatementTransaction(tenant: tenant.id) {
            var written = false
            for try await value in try await database.client.execute(call, logger: database.logger) { written = value }
            return written
        }
        guard written else { return nil }
        outbox.announceCommitted()
        usage.record(tenant: tenant.id, clientID: request.client.clientID)
        return response(request, access: access, refreshToken: refreshToken, idToken: idToken)
    }

    private func signIDToken(
        _ request: IssuanceRequest, access: SignedAccessToken, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey)
    ) throws -> String? {
        guard let plan = request.idToken, let userID = request.userID, access.scopes.contains("openid") else {
            return nil
        }
        let claims = IDTokenClaims(
            iss: endpoints.issuer, sub: userID.lowercasedString, aud: request.client.clientID,
            azp: request.client.clientID, iat: access.issuedAt,
            exp: access.issuedAt + Int64(tenant.policy.tokenLifetimes.idToken),
            authTime: Int64(plan.authTime.timeIntervalSince1970), nonce: plan.nonce)
        return try CompactJWS.sign(
            claims: claims, using: signer.key, header: JWSHeaderParameters(typ: "JWT", kid: signer.kid))
    }

    private func signAccessToken(
        _ request: IssuanceRequest, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey)
    ) throws -> SignedAccessToken {
        // Every grant issues the intersection of what was asked (or stored in a code or refresh family),
        // the client's current registered scope and the tenant's current policy: removing a scope from
        // either stops it at the very next grant, refresh families included.
        let registered = Set(request.client.registeredScopes)
        // `admin` is issued by client credentials only, so it always names a client, never a user.
        let scopes = request.scopes.filter {
            registered.contains($0) && tenant.policy.permitsIssuing(scope: $0)
                && ($0 != AdminTokenVerifier.requiredScope || request.grantType == .clientCredentials)
        }
        guard !scopes.isEmpty else {
            throw OAuthError.invalidScope("the client or the tenant policy no longer allows the requested scope")
        }
        let now = Date()
        let lifetimes = tenant.policy.tokenLifetimes
        let isDCR = scopes.contains("dcr")
        let lifetime = isDCR ? lifetimes.dcrAccessToken : lifetimes.accessToken
        let audience = isDCR ? endpoints.registration : endpoints.defaultAudience
        let jti = RandomUUID.string()
        let issuedAt = Int64(now.timeIntervalSince1970)
        let scope = scopes.joined(separator: " ")
        let claims = AccessTokenClaims(
            iss: endpoints.issuer, sub: request.userID.map(\.lowercasedString) ?? request.client.clientID,
            aud: Audience(audience), clientID: request.client.clientID, scope: scope, jti: jti,
            iat: issuedAt, exp: issuedAt + Int64(lifetime),
            cnf: request.jkt.map { AccessTokenClaims.Confirmation(jkt: $0) })
        let token = try CompactJWS.sign(
            claims: claims, using: signer.key, header: JWSHeaderParameters(typ: "at+jwt", kid: signer.kid))
        return SignedAccessToken(
            token: token, jti: jti, scopes: scopes, scope: scope, audience: audience, lifetime: lifetime,
            issuedAt: issuedAt, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)))
    }

    private func event(
        _ request: IssuanceRequest, tenant: ResolvedTenant, access: SignedAccessToken, refreshToken: String?,
        idToken: String?
    ) -> CloudEvent<TokenIssued> {
        var kinds: [TokenIssued.TokenKind] = [.access]
        if refreshToken != nil { kinds.append(.refresh) }
        if idToken != nil { kinds.append(.id) }
        let event = TokenIssued(
            tenant: tenant.slug, clientID: request.client.clientID, userID: request.userID,
            grantType: request.grantType,
            scope: access.scope, jti: access.jti, jkt: request.jkt, tokenTypes: kinds, expiresAt: access.expiresAt,
            refreshExpiresAt: refreshToken == nil ? nil : request.refresh?.expiresAt,
            refreshFamilyID: refreshToken == nil ? nil : request.refresh?.familyID.lowercasedString,
            audience: [access.audience], actor: .client(request.client.clientID))
        return CloudEvent(source: EventSource.tokenService, data: event)
    }

    private func response(
        _ request: IssuanceRequest, access: SignedAccessToken, refreshToken: String?, idToken: String?
    ) -> TokenResponse {
        TokenResponse(
            accessToken: access.token, tokenType: request.jkt == nil ? "Bearer" : "DPoP", expiresIn: access.lifetime,
            scope: access.scope, refreshToken: refreshToken, idToken: idToken, accessTokenID: access.jti)
    }
}

/// The client was revoked, expired or given a new secret after its record was read for this grant.
struct ClientNoLongerUsable: Error {}

/// OpenID Connect Core §2 ID token claims.
struct IDTokenClaims: Codable, Sendable {
    var iss: String
    var sub: String
    var aud: String
    var azp: String
    var iat: Int64
    var exp: Int64
    var authTime: Int64
    var nonce: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, azp, iat, exp, nonce
        case authTime = "auth_time"
    }
}
