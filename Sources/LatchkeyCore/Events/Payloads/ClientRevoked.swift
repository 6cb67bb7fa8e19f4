import Foundation

/// A client stopped being usable. `dpop-verifier` consumes this to reject the client's access
/// tokens within seconds; the token service has already killed its refresh tokens.
public struct ClientRevoked: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .clientRevoked }

    /// Why the client was revoked.
    public enum Reason: String, ProtocolStringEnum {
        /// RFC 7592 DELETE by the client or its user.
        case deregistered
        /// An administrator revoked this client; `reason_detail` holds the stated reason.
        case admin
        /// Unused for longer than the policy's `inactive_client_ttl`.
        case expired
        /// Every client of a user was revoked at once (by an administrator or the user).
        case userRevokedAll = "user_revoked_all"
        /// A rotated refresh token was replayed and the client is no longer trusted.
        case refreshTokenReuse = "refresh_token_reuse"
        /// The instance's own user removed it from their account ("remove this device").
        case user

        public static var valueDescription: String { "revocation reason" }

        /// The status the client is left in.
        public var resultingStatus: ClientStatus {
            switch self {
            case .deregistered: return .deleted
            case .expired: return .expired
            case .admin, .userRevokedAll, .refreshTokenReuse, .user: return .revoked
            }
        }
    }

    public var tenant: TenantSlug
    public var clientID: String
    public var reason: Reason
    /// Free text an administrator gave ("device reported stolen"); never a credential.
    public var reasonDetail: String?
    public var authenticatedUser: UUID?
    public var actor: EventActor
    public var revokedAt: Date
    /// When the last access token the client may hold expires, at the latest; after it, nobody needs to remember
    /// the revocation. Absent in events of older producers, and where the producer cannot see the client's tokens.
    public var accessTokensExpireAt: Date?

    public var eventSubject: String { clientID }

    /// Added to `revoked_at` plus an access-token lifetime: a grant that read the client as active just before the
    /// revocation committed signs its token a little later than `revoked_at`.
    public static let issuanceSlackSeconds: Int64 = 60

    public init(
        tenant: TenantSlug,
        clientID: String,
        reason: Reason,
        reasonDetail: String? = nil,
        authenticatedUser: UUID? = nil,
        actor: EventActor,
        revokedAt: Date,
        accessTokensExpireAt: Date? = nil
    ) {
        self.tenant = tenant
        self.clientID = clientID
        self.reason = reason
        self.reasonDetail = reasonDetail
        self.authenticatedUser = authenticatedUser
        self.actor = actor
        self.revokedAt = RFC3339Timestamp.normalized(revokedAt)
        self.accessTokensExpireAt = accessTokensExpireAt.map(RFC3339Timestamp.normalized)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case clientID = "client_id"
        case reason
        case reasonDetail = "reason_detail"
        case authenticatedUser = "authenticated_user"
        case actor
        case revokedAt = "revoked_at"
        case accessTokensExpireAt = "access_tokens_expire_at"
    }
}
