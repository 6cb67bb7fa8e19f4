import Foundation

/// Links an upstream provider's account to a Latchkey user; unique on (tenant, provider, provider_user_id),
/// which is what makes repeated federation callbacks idempotent.
public struct ExternalIdentity: Codable, Sendable, Hashable {
    public var tenant: TenantSlug
    /// The `id` of an `UpstreamIdentityProvider` in the tenant's policy.
    public var provider: String
    /// The provider's `sub` for this account.
    public var providerUserID: String
    public var userID: UUID

    public init(tenant: TenantSlug, provider: String, providerUserID: String, userID: UUID) {
        self.tenant = tenant
        self.provider = provider
        self.providerUserID = providerUserID
        self.userID = userID
    }

    enum CodingKeys: String, CodingKey {
        case tenant
        case provider
        case providerUserID = "provider_user_id"
        case userID = "user_id"
    }
}
