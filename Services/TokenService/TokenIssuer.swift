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
    /// The refresh token's value when the grant derived it (rotation); a fresh random one otherwise.
    var token: String? = nil
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

/// Signs access and ID tokens, stores their records and refresh tokens, and writes `TokenIssued` —
/// all on the caller's open transaction, so the grant's state change and its event commit together.
struct TokenIssuer: Sendable {
    let hasher: KeyedHasher
    let outbox: OutboxWriter

    func issue(
        _ request: IssuanceRequest, tenant: ResolvedTenant, endpoints: TenantEndpoints,
        signer: (kid: String, key: SigningKey), on connection: PostgresConnection, logger: Logger
    ) async throws -> TokenResponse {
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
        let jti = UUID().uuidString.lowercased()
        let issuedAt = Int64(now.timeIntervalSince1970)
        let expiresAt = now.addingTimeInterval(TimeInterval(lifetime))
        let scope = scopes.joined(separator: " ")
        let claims = AccessTokenClaims(
            iss: endpoints.issuer, sub: request.userID.map { $0.uuidString.lowercased() } ?? request.client.clientID,
            aud: Audience(audience), clientID: request.client.clientID, scope: scope, jti: jti,
            iat: issuedAt, exp: issuedAt + Int64(lifetime),
            cnf: request.jkt.map { AccessTokenClaims.Confirmation(jkt: $0) })
        let accessToken = try CompactJWS.sign(
            claims: claims, using: signer.key, header: JWSHeaderParameters(typ: "at+jwt", kid: signer.kid))
        try await connection.query(
            """
            INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, family_id, expires_at)
            VALUES (\(tenant.id), \(jti), \(request.client.clientID), \(request.userID), \(request.refresh?.familyID ?? request.familyID), \(expiresAt))
            """, logger: logger)
        // What the gateway's inactive-client expiry measures; written at most once a minute per client so a
        // busy client does not rewrite its row on every token.
        try await connection.query(
            """
            UPDATE clients SET last_used_at = \(now)
            WHERE tenant_id = \(tenant.id) AND client_id = \(request.client.clientID)
              AND (last_used_at IS NULL OR last_used_at < \(now.addingTimeInterval(-60)))
            """, logger: logger)

        var refreshToken: String?
        if let plan = request.refresh {
            let token = plan.token ?? SecretTokens.generate()
            try await connection.query(
                """
                INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, generation, client_id, user_id, scope, dpop_jkt, expires_at)
                VALUES (\(tenant.id), \(hasher.hash(token)), \(plan.familyID), \(plan.generation), \(request.client.clientID),
                        \(request.userID), \(scope), \(plan.boundJKT), \(plan.expiresAt))
                """, logger: logger)
            refreshToken = token
        }

        var idToken: String?
        if let plan = request.idToken, let userID = request.userID, scopes.contains("openid") {
            let claims = IDTokenClaims(
                iss: endpoints.issuer, sub: userID.uuidString.lowercased(), aud: request.client.clientID,
                azp: request.client.clientID, iat: issuedAt, exp: issuedAt + Int64(lifetimes.idToken),
                authTime: Int64(plan.authTime.timeIntervalSince1970), nonce: plan.nonce)
            idToken = try CompactJWS.sign(
                claims: claims, using: signer.key, header: JWSHeaderParameters(typ: "JWT", kid: signer.kid))
        }

        var kinds: [TokenIssued.TokenKind] = [.access]
        if refreshToken != nil { kinds.append(.refresh) }
        if idToken != nil { kinds.append(.id) }
        let event = TokenIssued(
            tenant: tenant.slug, clientID: request.client.clientID, userID: request.userID,
            grantType: request.grantType,
            scope: scope, jti: jti, jkt: request.jkt, tokenTypes: kinds, expiresAt: expiresAt,
            refreshExpiresAt: refreshToken == nil ? nil : request.refresh?.expiresAt,
            refreshFamilyID: refreshToken == nil ? nil : request.refresh?.familyID.uuidString.lowercased(),
            audience: [audience], actor: .client(request.client.clientID))
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)

        return TokenResponse(
            accessToken: accessToken, tokenType: request.jkt == nil ? "Bearer" : "DPoP", expiresIn: lifetime,
            scope: scope,
            refreshToken: refreshToken, idToken: idToken, accessTokenID: jti)
    }
}

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
