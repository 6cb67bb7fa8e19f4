import Foundation
import LatchkeyCore
import LatchkeyServer

/// Redirect URI rules of RFC 3986, RFC 7591 and RFC 8252 §7–8 for native and web clients. Every place
/// that stores a redirect URI (registration, RFC 7592 updates, admin clients, templates, software
/// statements) goes through `validate`.
enum RedirectURIValidator {
    static let maximumLength = 2048
    static let maximumCount = 20

    /// Checks every URI of `uris` (field `field`, e.g. `redirect_uris`) for `applicationType`.
    static func validate(_ uris: [String], field: String, applicationType: ApplicationType) throws {
        guard uris.count <= maximumCount else {
            throw RegistrationError.invalidRedirectURI("\(field) may hold at most \(maximumCount) URIs")
        }
        for uri in uris { try validate(uri, field: field, applicationType: applicationType) }
    }

    static func validate(_ uri: String, field: String, applicationType: ApplicationType) throws {
        func refuse(_ why: String) -> OAuthError {
            RegistrationError.invalidRedirectURI("\(field): \(why)")
        }
        guard !uri.isEmpty, uri.utf8.count <= maximumLength else {
            throw refuse("each URI must have 1 to \(maximumLength) characters")
        }
        // Printable ASCII only: no look-alike schemes, bidi overrides, spaces or control characters.
        guard uri.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw refuse("URIs must be printable ASCII without spaces (percent-encode anything else)")
        }
        guard !uri.contains("#") else { throw refuse("a redirect URI must not contain a fragment") }
        // Exact matching compares strings, while browsers and apps resolve what they are given: anything
        // two readers could resolve differently (broken escapes, dot segments, impossible ports) is refused.
        let syntax: Syntax
        do { syntax = try Syntax(uri) } catch { throw refuse(error.reason) }
        guard let components = URLComponents(string: uri), let scheme = components.scheme?.lowercased(),
            isValidScheme(scheme), scheme == syntax.scheme
        else { throw refuse("not an absolute URI") }
        guard components.user == nil, components.password == nil, !syntax.hasUserInfo else {
            throw refuse("a redirect URI must not contain user information")
        }
        let host = components.host?.lowercased() ?? ""
        switch applicationType {
        case .web:
            guard scheme == "https", !host.isEmpty else { throw refuse("web clients must use https URIs with a host") }
        case .native:
            switch scheme {
            case "https":
                guard !host.isEmpty else { throw refuse("https URIs need a host") }
            case "http":
                if host == "localhost" || host.hasSuffix(".localhost") {
                    throw refuse("use the loopback IP literal 127.0.0.1 or [::1] instead of localhost (RFC 8252 §8.3)")
                }
                guard isLoopbackLiteral(host) else {
                    throw refuse("http is allowed only for loopback redirects to 127.0.0.1 or [::1] (RFC 8252 §7.3)")
                }
            default:
                // RFC 8252 §7.1: private-use schemes are reverse domain names, e.g. com.example.app.
                guard scheme.contains("."), !scheme.hasPrefix("."), !scheme.hasSuffix("."), !scheme.contains("..")
                else {
                    throw refuse(
                        "private-use URI schemes must be reverse domain names such as com.example.app (RFC 8252 §7.1)")
                }
            }
        }
    }

    /// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            return false
        }
        return scheme.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }

    static func isLoopbackLiteral(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "[::1]" || host == "::1"
    }
}
