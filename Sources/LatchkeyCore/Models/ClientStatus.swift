import Foundation

/// Lifecycle state of a registered client; only `active` clients may authenticate or get tokens.
public enum ClientStatus: String, ProtocolStringEnum {
    case active
    /// Revoked by an administrator, the user, or reuse detection.
    case revoked
    /// Deregistered through RFC 7592 DELETE.
    case deleted
    /// Unused for longer than the policy's `inactive_client_ttl`.
    case expired

    public static var valueDescription: String { "client status" }

    public var isActive: Bool { self == .active }
}
