import Foundation

/// An authorization endpoint response type in client metadata (RFC 7591 §2).
public enum ResponseType: String, ProtocolStringEnum {
    case code
    /// Implicit flow; recognised only so registration can refuse it with a precise message.
    case token

    public static var valueDescription: String { "response type" }

    /// The grant type RFC 7591 §2.1 requires alongside this response type.
    public var correspondingGrantType: GrantType {
        switch self {
        case .code: return .authorizationCode
        case .token: return .implicit
        }
    }
}
