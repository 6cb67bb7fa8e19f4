import Foundation

/// A user of one tenant; `id` is Latchkey's own UUID, never derived from an upstream provider.
public struct User: Codable, Sendable, Hashable, Identifiable {
    /// Whether a user may sign in.
    public enum Status: String, ProtocolStringEnum {
        case active
        /// Temporarily refused at sign-in, e.g. after repeated failed passwords.
        case locked
        /// Blocked by an administrator; sessions and refresh tokens stop working.
        case disabled

        public static var valueDescription: String { "user status" }
    }

    public var id: UUID
    public var tenant: TenantSlug
    /// Unique per tenant; for users provisioned from a provider, chosen at first sign-in.
    public var username: String
    public var email: String?
    public var status: Status
    public var createdAt: Date

    public init(
        id: UUID = UUID(), tenant: TenantSlug, username: String, email: String? = nil, status: Status = .active,
        createdAt: Date
    ) {
        self.id = id
        self.tenant = tenant
        self.username = username
        self.email = email
        self.status = status
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id
        case tenant
        case username
        case email
        case status
        case createdAt = "created_at"
    }
}
