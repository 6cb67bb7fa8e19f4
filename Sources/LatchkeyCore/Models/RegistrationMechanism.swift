import Foundation

/// How a client came to be registered (DCR token, initial access token, open registration, or the admin API).
public enum RegistrationMechanism: String, ProtocolStringEnum {
    /// RFC 7591 with a user's DCR access token (scope `dcr`).
    case userToken = "user_token"
    /// RFC 7591 with an administrator-minted initial access token ("device authenticates").
    case initialAccessToken = "initial_access_token"
    /// RFC 7591 without any token, where the tenant allows it.
    case open
    /// Created through the admin API (static clients). Not dynamic, so never listed in a policy.
    case admin

    public static var valueDescription: String { "registration mechanism" }

    /// Whether the mechanism is RFC 7591 dynamic registration, i.e. something a policy can allow.
    public var isDynamic: Bool { self != .admin }
}
