import Foundation

/// How a client authenticates at the token endpoint (RFC 7591 §2).
public enum TokenEndpointAuthMethod: String, ProtocolStringEnum {
    /// `none`: a public client. Not spelled `.none`, which `Optional` would shadow in comparisons.
    case noAuthentication = "none"
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
    case privateKeyJWT = "private_key_jwt"

    public static var valueDescription: String { "token endpoint auth method" }

    /// The client type this method implies: only `none` makes a public client.
    public var clientType: ClientType { self == .noAuthentication ? .public : .confidential }

    /// Whether the server issues a `client_secret` for this method.
    public var usesClientSecret: Bool { self == .clientSecretBasic || self == .clientSecretPost }
}
