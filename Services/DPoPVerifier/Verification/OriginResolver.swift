import Foundation
import HTTPTypes
import NIOCore

/// Works out which configured external origin a request addressed, and whether its peer is a
/// trusted proxy. Only a trusted peer's `Forwarded` / `X-Forwarded-Host` / `-Proto` are read;
/// either way the answer is one of the configured origins (see ``ExternalOrigins``).
struct OriginResolver: Sendable {
    let origins: ExternalOrigins
    let trustedProxies: TrustedProxies

    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwarded = HTTPField.Name("Forwarded")!

    func isTrusted(_ peer: SocketAddress?) -> Bool {
        trustedProxies.contains(peer)
    }

    /// - Parameter authority: the request's `Host` (HTTP/1.1) or `:authority` (HTTP/2).
    func origin(authority: String?, headers: some RequestHeaderFields, peerTrusted: Bool) -> String {
        if peerTrusted {
            if let forwarded = headers.combined(Self.forwarded).flatMap(Self.lastForwardedElement),
                let host = forwarded["host"]
            {
                return origins.select(host: host, scheme: forwarded["proto"])
            }
            if let host = headers.combined(Self.forwardedHost).flatMap(Self.lastListValue) {
                return origins.select(
                    host: host, scheme: headers.combined(Self.forwardedProto).flatMap(Self.lastListValue))
            }
        }
        return origins.select(host: authority, scheme: nil)
    }

    /// The element the proxy nearest to us appended: the last comma-separated value.
    static func lastListValue(_ value: String) -> String? {
        value.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }.flatMap {
            $0.isEmpty ? nil : $0
        }
    }

    /// RFC 7239: the last element's `name=value` pairs (names lower-cased, quotes removed).
    static func lastForwardedElement(_ value: String) -> [String: String]? {
        guard let element = value.split(separator: ",").last else { return nil }
        var pairs: [String: String] = [:]
        for pair in element.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            var value = parts[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            pairs[parts[0].trimmingCharacters(in: .whitespaces).lowercased()] = value
        }
        return pairs
    }
}
