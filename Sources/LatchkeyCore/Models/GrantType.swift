import Foundation

/// An OAuth 2.0 grant type as named in client metadata and at the token endpoint (RFC 7591 §2).
///
/// `implicit` is recognised only so that registration can refuse it with a precise message;
/// the token service implements the code flow only.
public enum GrantType: String, ProtocolStringEnum {
    case authorizationCode = "authorization_code"
    case implicit
    case refreshToken = "refresh_token"
    case clientCredentials = "client_credentials"

    public static var valueDescription: String { "grant type" }

    /// Whether the token service issues tokens for this grant.
    public var isSupported: Bool { self != .implicit }

    /// The response type RFC 7591 §2.1 pairs with this grant, if any.
    public var correspondingResponseType: ResponseType? {
        switch self {
        case .authorizationCode: return .code
        case .implicit: return .token
        case .refreshToken, .clientCredentials: return nil
        }
    }
}
