import Foundation

/// An administrator disabled a user: sign-in, sessions and grants end, and resource servers refuse the
/// user's access tokens until a later `UserEnabled`. Carries no credential.
public struct UserDisabled: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .userDisabled }

    public var tenant: TenantSlug
    public var userID: UUID
    /// Free text the administrator gave ("account compromised").
    public var reason: String
    public var actor: EventActor
    public var disabledAt: Date

    public var eventSubject: String { userID.uuidString }

    public init(tenant: TenantSlug, userID: UUID, reason: String, actor: EventActor, disabledAt: Date) {
        self.tenant = tenant
        self.userID = userID
        self.reason = reason
        self.actor = actor
        self.disabledAt = RFC3339Timestamp.normalized(disabledAt)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case userID = "user_id"
        case reason
        case actor
        case disabledAt = "disabled_at"
    }
}

/// An administrator enabled a disabled user again; published on the `UserDisabled` topic so that consumers
/// see both in order.
public struct UserEnabled: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .userEnabled }

    public var tenant: TenantSlug
    public var userID: UUID
    public var reason: String
    public var actor: EventActor
    public var enabledAt: Date

    public var eventSubject: String { userID.uuidString }

    public init(tenant: TenantSlug, userID: UUID, reason: String, actor: EventActor, enabledAt: Date) {
        self.tenant = tenant
        self.userID = userID
        self.reason = reason
        self.actor = actor
        self.enabledAt = RFC3339Timestamp.normalized(enabledAt)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case userID = "user_id"
        case reason
        case actor
        case enabledAt = "enabled_at"
    }
}
