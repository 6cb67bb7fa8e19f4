import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the platform's own outgoing requests may go: upstream identity providers (discovery, token,
/// JWKS), software-statement issuers' `jwks_uri`. These URLs come from tenant policies and client
/// metadata, so they are attacker-chosen: only `https`, and only to public addresses — checked on the
/// addresses a name resolves to at request time, so a name pointing at 127.0.0.1 or a cloud metadata
/// address is refused like the literal address.
public struct OutboundPolicy: Sendable {
    /// Plain `http` to loopback addresses, for development and tests only.
    public var allowLoopbackHTTP: Bool
    /// Non-public networks an operator allows (e.g. an identity provider on the cluster network).
    public var allowedNetworks: [IPNetwork]

    public init(allowLoopbackHTTP: Bool = false, allowedNetworks: [IPNetwork] = []) {
        self.allowLoopbackHTTP = allowLoopbackHTTP
        self.allowedNetworks = allowedNetworks
    }

    /// Production default: https to public addresses only.
    public static let publicHTTPSOnly = OutboundPolicy()

    /// Reads `OUTBOUND_ALLOW_LOOPBACK_HTTP` (development: http and addresses on loopback) and
    /// `OUTBOUND_ALLOWED_NETWORKS` (comma-separated CIDR blocks an operator allows).
    public init(allowLoopbackHTTP: Bool, allowedNetworks text: String?) throws {
        var networks: [IPNetwork] = []
        for item in (text ?? "").split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
        where !item.isEmpty {
            guard let network = IPNetwork(item) else {
                throw ConfigurationError("OUTBOUND_ALLOWED_NETWORKS: \(item) is not an IP address or CIDR block")
            }
            networks.append(network)
        }
        self.init(allowLoopbackHTTP: allowLoopbackHTTP, allowedNetworks: networks)
    }

    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// A URL that passed the static checks: scheme, host and port.
    public struct Target: Sendable, Equatable {
        public let scheme: String
        public let host: String
        public let port: Int
    }

    /// Checks what can be checked without DNS: an absolute `https` URL (or `http` to a loopback literal or
    /// `localhost` when allowed), no user info, a host.
    public func target(_ url: String) throws(Refusal) -> Target {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { throw Refusal(description: "not an absolute URL") }
        guard components.user == nil, components.password == nil else {
            throw Refusal(description: "URLs with user info are refused")
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        switch scheme {
        case "https":
            break
        case "http":
            let loopbackHost = bare == "localhost" || IPNetwork.parseAddress(bare).map(isLoopback) == true
            guard allowLoopbackHTTP, loopbackHost else {
                throw Refusal(description: "only https URLs are allowed")
            }
        default:
            throw Refusal(description: "only https URLs are allowed")
        }
        return Target(scheme: scheme, host: bare, port: components.port ?? (scheme == "https" ? 443 : 80))
    }

    /// Whether requests may go to `address` (4 or 16 bytes).
    public func permits(_ address: [UInt8]) -> Bool {
        let address = IPNetwork.unmapped(address)
        if allowedNetworks.contains(where: { $0.contains(address) }) { return true }
        if allowLoopbackHTTP, isLoopback(address) { return true }
        return !IPNetwork.nonPublic.contains { $0.contains(address) }
    }

    private func isLoopback(_ address: [UInt8]) -> Bool {
        IPNetwork.loopback.contains { $0.contains(address) }
    }

    /// Resolves the target's host and returns the address to connect to: every address the name resolves
    /// to must be permitted (a name with one private address among public ones is refused, so a resolver
    /// cannot steer a later connection there).
    public func resolve(_ target: Target) async throws(Refusal) -> String {
        if let literal = IPNetwork.parseAddress(target.host) {
            guard permits(literal) else {
                throw Refusal(description: "\(target.host) is not a public address")
            }
            return IPNetwork.format(literal)
        }
        let host = target.host
        let result: Result<[[UInt8]], Refusal> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: Self.lookup(host)) }
        }
        let addresses = try result.get()
        guard let first = addresses.first else { throw Refusal(description: "\(host) does not resolve") }
        for address in addresses where !permits(address) {
            throw Refusal(
                description: "\(host) resolves to \(IPNetwork.format(address)), which is not a public address")
        }
        return IPNetwork.format(first)
    }

    private static func lookup(_ host: String) -> Result<[[UInt8]], Refusal> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else { return .failure(Refusal(description: "\(host) does not resolve")) }
        defer { freeaddrinfo(list) }
        var addresses: [[UInt8]] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr {
                switch current.pointee.ai_family {
                case AF_INET:
                    socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        addresses.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) })
                    }
                case AF_INET6:
                    socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        addresses.append(IPNetwork.unmapped(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }))
                    }
                default:
                    break
                }
            }
            entry = current.pointee.ai_next
        }
        return .success(addresses)
    }
}
