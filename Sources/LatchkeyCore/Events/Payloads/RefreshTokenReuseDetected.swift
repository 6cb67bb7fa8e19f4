import Foundation

/// A refresh token that had already been rotated was presented again: a sign of theft
/// (OAuth 2.0 Security BCP §4.14). Identifies the family, never the token.
public struct RefreshTokenReuseDetected: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .refreshTokenReuseDetected }

    public var tenant: TenantSlug
    public var clientID: String
    public var userID: UUID?
    public var refreshFamilyID: String
    /// Thumbprint of the DPoP key the replay came with, if any (differs from the bound key
    /// when someone else holds the token).
    public var jkt: String?
    /// IP address the replay came from.
    public var sourceAddress: String?
    /// Whether the whole family was revoked in response.
    public var familyRevoked: Bool
    public var actor: EventActor

    public var eventSubject: String { clientID }

    public init(
        tenant: TenantSlug,
        clientID: String,
        userID: UUID? = nil,
        refreshFamilyID: String,
        jkt: String? = nil,
        sourceAddress: String? = nil,
        familyRevoked: Bool,
        actor: EventActor
    ) {
        self.tenant = tenant
        self.clientID = clientID
        self.userID = userID
        self.refreshFamilyID = refreshFamilyID
        self.jkt = jkt
        self.sourceAddress = sourceAddress
        self.familyRevoked = familyRevoked
        self.actor = actor
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case clientID = "client_id"
        case userID = "user_id"
        case refreshFamilyID = "refresh_family_id"
        case jkt
        case sourceAddress = "source_address"
        case familyRevoked = "family_revoked"
        case actor
    }
}
