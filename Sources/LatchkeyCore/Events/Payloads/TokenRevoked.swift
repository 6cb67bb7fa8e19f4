import Foundation

/// Tokens were revoked: by RFC 7009, by a replayed code or refresh token, or with their client.
public struct TokenRevoked: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .tokenRevoked }

    /// Why tokens were revoked.
    public enum Reason: String, ProtocolStringEnum {
        /// The client asked through the RFC 7009 revocation endpoint.
        case revocationRequest = "revocation_request"
        /// An authorization code was redeemed twice; what it issued is revoked (RFC 6749 §4.1.2).
        case authorizationCodeReplay = "authorization_code_replay"
        /// A rotated refresh token was replayed; its whole family is revoked.
        case refreshTokenReuse = "refresh_token_reuse"
        /// The client was revoked, deregistered or expired.
        case clientRevoked = "client_revoked"
        /// An administrator revoked them.
        case admin
        /// The user signed out of one device: their grants on that client, other users' untouched.
        case user

        public static var valueDescription: String { "token revocation reason" }
    }

    public var tenant: TenantSlug
    public var clientID: String
    public var userID: UUID?
    /// The kind of token revoked.
    public var tokenType: TokenIssued.TokenKind
    /// `jti` of the revoked token, when one token was named.
    public var jti: String?
    /// The refresh token family revoked, for family-wide revocation.
    public var refreshFamilyID: String?
    /// How many stored tokens the revocation ended.
    public var revokedCount: Int?
    /// `jti`s of the access tokens ended that had not expired yet: resource servers refuse them at once.
    public var revokedJTIs: [String]?
    /// When the last of those access tokens expires; after it, nobody needs to remember them.
    public var accessTokensExpireAt: Date?
    public var reason: Reason
    public var reasonDetail: String?
    public var actor: EventActor
    public var revokedAt: Date

    public var eventSubject: String { clientID }

    public init(
        tenant: TenantSlug,
        clientID: String,
        userID: UUID? = nil,
        tokenType: TokenIssued.TokenKind,
        jti: String? = nil,
        refreshFamilyID: String? = nil,
        revokedCount: Int? = nil,
        revokedJTIs: [String]? = nil,
        accessTokensExpireAt: Date? = nil,
        reason: Reason,
        reasonDetail: String? = nil,
        actor: EventActor,
        revokedAt: Date
    ) {
        self.tenant = tenant
        self.clientID = clientID
        self.userID = userID
        self.tokenType = tokenType
        self.jti = jti
        self.refreshFamilyID = refreshFamilyID
        self.revokedCount = revokedCount
        self.revokedJTIs = revokedJTIs
        self.accessTokensExpireAt = accessTokensExpireAt.map(RFC3339Timestamp.normalized)
        self.reason = reason
        self.reasonDetail = reasonDetail
        self.actor = actor
        self.revokedAt = RFC3339Timestamp.normalized(revokedAt)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case clientID = "client_id"
        case userID = "user_id"
        case tokenType = "token_type"
        case jti
        case refreshFamilyID = "refresh_family_id"
        case revokedCount = "revoked_count"
        case revokedJTIs = "revoked_jtis"
        case accessTokensExpireAt = "access_tokens_expire_at"
        case reason
        case reasonDetail = "reason_detail"
        case actor
        case revokedAt = "revoked_at"
    }
}
