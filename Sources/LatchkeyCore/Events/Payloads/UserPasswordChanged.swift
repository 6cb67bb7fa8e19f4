import Foundation

/// A user's password was replaced: by the signed-in user (who gave the current one again) or by an
/// administrator's reset. Carries neither password nor hash.
public struct UserPasswordChanged: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .userPasswordChanged }

    /// Who set the new password.
    public enum Method: String, ProtocolStringEnum {
        /// The user, on the signed-in password page; their other SSO sessions end.
        case user
        /// An administrator (`POST /admin/tenants/{t}/users/{id}/password`); sessions and tokens stay.
        case adminReset = "admin_reset"

        public static var valueDescription: String { "password change method" }
    }

    public var tenant: TenantSlug
    public var userID: UUID
    public var method: Method
    public var actor: EventActor
    public var changedAt: Date

    /// User events have no client of their own, so the user id is the subject and key.
    public var eventSubject: String { userID.uuidString }

    public init(tenant: TenantSlug, userID: UUID, method: Method, actor: EventActor, changedAt: Date) {
        self.tenant = tenant
        self.userID = userID
        self.method = method
        self.actor = actor
        self.changedAt = RFC3339Timestamp.normalized(changedAt)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case userID = "user_id"
        case method
        case actor
        case changedAt = "changed_at"
    }
}
