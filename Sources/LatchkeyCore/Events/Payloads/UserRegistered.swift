import Foundation

/// A user account was created, by sign-up or by first sign-in through an upstream provider.
/// Holds no password, no email and no provider token.
public struct UserRegistered: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .userRegistered }

    /// How the account came to exist.
    public enum Method: String, ProtocolStringEnum {
        /// Username and password on Latchkey's sign-up page.
        case password
        /// First sign-in through an upstream OpenID Connect provider.
        case upstream
        /// Created by an administrator (demo seeding, admin API).
        case admin

        public static var valueDescription: String { "user registration method" }
    }

    public var tenant: TenantSlug
    public var userID: UUID
    public var username: String
    public var method: Method
    /// The upstream provider id, for `upstream`.
    public var provider: String?
    /// The client whose authorization request led to the sign-up, if any.
    public var clientID: String?
    public var actor: EventActor

    /// User events have no client of their own, so the user id is the subject and key.
    public var eventSubject: String { userID.uuidString }

    public init(
        tenant: TenantSlug,
        userID: UUID,
        username: String,
        method: Method,
        provider: String? = nil,
        clientID: String? = nil,
        actor: EventActor
    ) {
        self.tenant = tenant
        self.userID = userID
        self.username = username
        self.method = method
        self.provider = provider
        self.clientID = clientID
        self.actor = actor
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case userID = "user_id"
        case username
        case method
        case provider
        case clientID = "client_id"
        case actor
    }
}
