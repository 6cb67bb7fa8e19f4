import Foundation

/// Whether a client can keep a credential (RFC 6749 §2.1).
public enum ClientType: String, ProtocolStringEnum {
    case `public`
    case confidential

    public static var valueDescription: String { "client type" }
}
