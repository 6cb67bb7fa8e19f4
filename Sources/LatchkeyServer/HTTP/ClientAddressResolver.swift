import Configuration
import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import NIOCore

/// The client address every limiter counts against: the TCP peer, unless that peer is one of the
/// operator's `TRUSTED_PROXIES`, in which case the right-most `Forwarded` (or, without it,
/// `X-Forwarded-For`) address that is not itself a trusted proxy. Anyone else's headers are ignored,
/// so an untrusted client cannot pick its own bucket.
public struct ClientAddressResolver: Sendable {
    public let trustedProxies: [IPNetwork]

    public static let peerOnly = ClientAddressResolver(trustedProxies: [])

    public init(trustedProxies: [IPNetwork]) {
        self.trustedProxies = trustedProxies
    }

    /// `TRUSTED_PROXIES`: comma-separated IP addresses or CIDR blocks; empty or unset trusts no one.
    public init(reader: ConfigReader) throws {
        try self.init(setting: SettingsReader(reader).text("trusted.proxies") ?? "")
    }

    public init(setting: String, name: String = "TRUSTED_PROXIES") throws {
        trustedProxies = try setting.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .map { value in
                guard let network = IPNetwork(value) else {
                    throw ConfigurationError("\(name): \(value) is not an IP address or CIDR block")
                }
                return network
            }
    }

    public func clientAddress(_ request: Request, context: LatchkeyRequestContext) -> String {
        clientAddress(peer: context.remoteAddress, headers: request.headers)
    }

    public func clientAddress(peer: SocketAddress?, headers: HTTPFields) -> String {
        guard let peerBytes = peer.flatMap(Self.addressBytes) else { return peer?.ipAddress ?? "unknown" }
        let peerText = IPNetwork.format(peerBytes)
        guard isTrusted(peerBytes) else { return peerText }
        let forwarded = headers[values: .forwarded]
        let hops =
            forwarded.isEmpty
            ? headers[values: .xForwardedFor].flatMap { $0.split(separator: ",").map(String.init) }
            : forwarded.flatMap(Self.forwardedFor)
        var nearest = peerText
        for hop in hops.reversed() {
            // An unreadable hop cannot be attributed: count the request against the last hop we trust.
            guard let bytes = IPNetwork.parseAddress(Self.stripPort(hop.trimmingCharacters(in: .whitespaces))) else {
                return nearest
            }
            nearest = IPNetwork.format(bytes)
            if !isTrusted(bytes) { return nearest }
        }
        return nearest
    }

    public func isTrusted(_ bytes: [UInt8]) -> Bool {
        trustedProxies.contains { $0.contains(bytes) }
    }

    /// The `for=` values of one `Forwarded` header (RFC 7239), in order.
    static func forwardedFor(_ header: String) -> [String] {
        header.split(separator: ",").compactMap { element in
            for pair in element.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, parts[0].lowercased() == "for" else { continue }
                var value = parts[1]
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                    value = String(value.dropFirst().dropLast())
                }
                return value
            }
            return nil
        }
    }

    /// `192.0.2.1:8080` → `192.0.2.1`, `[2001:db8::1]:443` → `2001:db8::1`; bare IPv6 is left alone.
    static func stripPort(_ value: String) -> String {
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            return String(value[value.index(after: value.startIndex)..<close])
        }
        if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
            return String(value[..<colon])
        }
        return value
    }

    /// The peer's address bytes; IPv4-mapped IPv6 peers count as IPv4.
    static func addressBytes(_ address: SocketAddress) -> [UInt8]? {
        address.ipAddress.flatMap(IPNetwork.parseAddress)
    }
}

extension HTTPField.Name {
    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
