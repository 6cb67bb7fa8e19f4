import Foundation

/// A tenant: its own issuer, keys, users, clients and policy under `/t/{id}`.
public struct Tenant: Codable, Sendable, Hashable, Identifiable {
    /// Whether a tenant serves requests.
    public enum Status: String, ProtocolStringEnum {
        case active
        /// Keeps its data but answers like an unknown tenant: no sign-ins, registrations or tokens.
        case suspended

        public static var valueDescription: String { "tenant status" }
    }

    public var id: TenantSlug
    public var displayName: String
    public var status: Status
    public var createdAt: Date
    /// The `version` of the policy currently in force.
    public var policyVersion: Int
    /// The branding of the policy in force, carried here so pages need not decode the whole policy.
    public var branding: TenantBranding

    public init(
        id: TenantSlug,
        displayName: String,
        status: Status = .active,
        createdAt: Date,
        policyVersion: Int = 1,
        branding: TenantBranding = TenantBranding()
    ) {
        self.id = id
        self.displayName = displayName
        self.status = status
        self.createdAt = createdAt
        self.policyVersion = policyVersion
        self.branding = branding
    }

    enum CodingKeys: String, CodingKey {
        case id
        case displayName = "display_name"
        case status
        case createdAt = "created_at"
        case policyVersion = "policy_version"
        case branding
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(TenantSlug.self, forKey: .id)
        displayName = try container.decode(String.self, forKey: .displayName)
        status = try container.decode(Status.self, forKey: .status)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        policyVersion = try container.decode(Int.self, forKey: .policyVersion)
        branding = try container.decodeIfPresent(TenantBranding.self, forKey: .branding) ?? TenantBranding()
    }
}
