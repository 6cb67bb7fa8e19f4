import Foundation

/// The kind of application a client is (OpenID Connect Registration §2, recorded per RFC 8252 §8.4).
public enum ApplicationType: String, ProtocolStringEnum {
    case native
    case web

    public static var valueDescription: String { "application type" }
}
