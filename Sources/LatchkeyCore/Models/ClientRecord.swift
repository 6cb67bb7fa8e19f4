import Foundation

/// A registered client as the registry keeps it: identity, state and metadata, never its secrets
/// (their keyed hashes live in their own columns and never leave the repository layer).
public struct ClientRecord: Codable, Sendable, Hashable, Identifiable {
    public var clientID: String
    public var tenant: TenantSlug
    public var status: ClientStatus
    public var clientType: ClientType
    public var applicationType: ApplicationType
    /// The user whose DCR token registered this instance; `nil` for static and open registrations.
    public var authenticatedUser: UUID?
    /// The template (`software_id`) this instance was made from, if any.
    public var templateID: String?
    /// Registered metadata with defaults filled in (for template instances: the template's
    /// metadata merged with the allowed overrides at registration time).
    public var metadata: ClientMetadata
    /// When the client secret stops working; `nil` when it never expires or there is none.
    public var secretExpiresAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// Last successful authentication or token grant; drives `inactive_client_ttl` expiry.
    public var lastUsedAt: Date?
    public var registrationMechanism: RegistrationMechanism

    public var id: String { clientID }

    public init(
        clientID: String,
        tenant: TenantSlug,
        status: ClientStatus = .active,
        clientType: ClientType,
        applicationType: ApplicationType,
        authenticatedUser: UUID? = nil,
        templateID: String? = nil,
        metadata: ClientMetadata,
        secretExpiresAt: Date? = nil,
        createdAt: Date,
        updatedAt: Date,
        lastUsedAt: Date? = nil,
        registrationMechanism: RegistrationMechanism
    ) {
        self.clientID = clientID
        self.tenant = tenant
        self.status = status
        self.clientType = clientType
        self.applicationType = applicationType
        self.authenticatedUser = authenticatedUser
        self.templateID = templateID
        self.metadata = metadata
        self.secretExpiresAt = secretExpiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastUsedAt = lastUsedAt
        self.registrationMechanism = registrationMechanism
    }

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case tenant
        case status
        case clientType = "client_type"
        case applicationType = "application_type"
        case authenticatedUser = "authenticated_user"
        case templateID = "template_id"
        case metadata
        case secretExpiresAt = "secret_expires_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case lastUsedAt = "last_used_at"
        case registrationMechanism = "registration_mechanism"
    }

    /// Whether the client may authenticate at `now`: active, and its secret (if any) not expired.
    public func isUsable(at now: Date) -> Bool {
        guard status.isActive else { return false }
        if let expiry = secretExpiresAt, expiry <= now { return false }
        return true
    }

    /// RFC 7591 `client_secret_expires_at`: seconds since the epoch, 0 when it never expires.
    public var clientSecretExpiresAtEpochSeconds: Int {
        secretExpiresAt.map { Int($0.timeIntervalSince1970) } ?? 0
    }
}
