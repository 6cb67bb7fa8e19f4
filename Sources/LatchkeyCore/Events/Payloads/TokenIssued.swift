import Foundation

/// Tokens were issued at the token endpoint. Identifies them by `jti` and key thumbprint only.
public struct TokenIssued: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .tokenIssued }

    /// Which tokens one grant response contained.
    public enum TokenKind: String, ProtocolStringEnum {
        case access
        case refresh
        case id

        public static var valueDescription: String { "token kind" }
    }

    public var tenant: TenantSlug
    public var clientID: String
    /// The end user the tokens are for; absent for `client_credentials`.
    public var userID: UUID?
    public var grantType: GrantType
    /// The granted scope string.
    public var scope: String
    /// `jti` of the access token.
    public var jti: String
    /// RFC 7638 thumbprint of the DPoP key the tokens are bound to (`cnf.jkt`).
    public var jkt: String?
    public var tokenTypes: [TokenKind]
    /// Expiry of the access token.
    public var expiresAt: Date
    /// Expiry of the refresh token, when one was issued.
    public var refreshExpiresAt: Date?
    /// The refresh token family (rotation chain) the refresh token belongs to.
    public var refreshFamilyID: String?
    /// `aud` of the access token.
    public var audience: [String]?
    public var actor: EventActor

    public var eventSubject: String { clientID }

    public init(
        tenant: TenantSlug,
        clientID: String,
        userID: UUID? = nil,
        grantType: GrantType,
        scope: String,
        jti: String,
        jkt: String? = nil,
        tokenTypes: [TokenKind],
        expiresAt: Date,
        refreshExpiresAt: Date? = nil,
        refreshFamilyID: String? = nil,
        audience: [String]? = nil,
        actor: EventActor
    ) {
        self.tenant = tenant
        self.clientID = clientID
        self.userID = userID
        self.grantType = grantType
        self.scope = scope
        self.jti = jti
        self.jkt = jkt
        self.tokenTypes = tokenTypes
        self.expiresAt = RFC3339Timestamp.normalized(expiresAt)
        self.refreshExpiresAt = refreshExpiresAt.map(RFC3339Timestamp.normalized)
        self.refreshFamilyID = refreshFamilyID
        self.audience = audience
        self.actor = actor
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case clientID = "client_id"
        case userID = "user_id"
        case grantType = "grant_type"
        case scope
        case jti
        case jkt
        case tokenTypes = "token_types"
        case expiresAt = "expires_at"
        case refreshExpiresAt = "refresh_expires_at"
        case refreshFamilyID = "refresh_family_id"
        case audience
        case actor
    }
}

extension TokenIssued: CompactJSONObject {
    public func writeMembers(to object: inout CompactJSONObjectWriter) {
        object.member("actor", object: actor)
        object.member("audience", audience)
        object.member("client_id", clientID)
        object.member("expires_at", expiresAt)
        object.member("grant_type", grantType)
        object.member("jkt", jkt)
        object.member("jti", jti)
        object.member("refresh_expires_at", refreshExpiresAt)
        object.member("refresh_family_id", refreshFamilyID)
        object.member("scope", scope)
        object.member("tenant", tenant)
        object.member("token_types", tokenTypes)
        object.member("user_id", userID)
    }
}
