import Foundation

/// Exact redirect URI matching (RFC 6749 §3.1.2.3), except that loopback IP redirects may use any port
/// (RFC 8252 §7.3): native apps bind an ephemeral port at request time.
enum RedirectURIMatcher {
    static func matches(requested: String, registered: [String]) -> Bool {
        if registered.contains(requested) { return true }
        guard let requestedKey = loopbackKey(requested) else { return false }
        return registered.contains { loopbackKey($0) == requestedKey }
    }

    /// The URI without its port when it is an `http` loopback IP literal redirect; nil otherwise.
    static func loopbackKey(_ uri: String) -> String? {
        guard var components = URLComponents(string: uri), components.scheme == "http",
            components.user == nil, components.password == nil, components.fragment == nil,
            let host = components.percentEncodedHost, host == "127.0.0.1" || host == "[::1]" || host == "::1"
        else { return nil }
        components.port = nil
        return components.string
    }
}
