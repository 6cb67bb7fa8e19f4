#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One IP network (an address and a prefix length; a single address is a /32 or /128), IPv4 or IPv6.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The network's address bytes: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]
    public let prefixLength: Int

    public init?(bytes: [UInt8], prefixLength: Int) {
        guard bytes.count == 4 || bytes.count == 16, (0...bytes.count * 8).contains(prefixLength) else { return nil }
        self.bytes = bytes
        self.prefixLength = prefixLength
    }

    /// Parses `10.0.0.0/8`, `192.0.2.7`, `fd00::/8` or `::1`.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let address = Self.parseAddress(parts[0]) else { return nil }
        var prefix = address.count * 8
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...prefix).contains(parsed) else { return nil }
            prefix = parsed
        }
        self.init(bytes: address, prefixLength: prefix)
    }

    public func contains(_ address: [UInt8]) -> Bool {
        guard address.count == bytes.count else { return false }
        var remaining = prefixLength
        for (candidate, network) in zip(address, bytes) where remaining > 0 {
            let bits = min(8, remaining)
            let mask: UInt8 = bits == 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            guard candidate & mask == network & mask else { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String { "\(Self.format(bytes))/\(prefixLength)" }

    /// The bytes of an IPv4 or IPv6 literal; IPv4-mapped IPv6 addresses come back as IPv4.
    public static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return unmapped(withUnsafeBytes(of: v6) { Array($0) }) }
        return nil
    }

    /// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as the IPv4 address it carries.
    public static func unmapped(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return Array(bytes[12...])
        }
        return bytes
    }

    /// The textual form of 4 or 16 address bytes; `?` for any other length.
    public static func format(_ bytes: [UInt8]) -> String {
        // inet_ntop reads 4 or 16 bytes whatever the array holds.
        guard bytes.count == 4 || bytes.count == 16 else { return "?" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Networks no outgoing request may reach unless an operator allows them: loopback, private
    /// (RFC 1918, unique-local), link-local (cloud metadata lives there), carrier-grade NAT,
    /// "this network", multicast and reserved ranges.
    public static let nonPublic: [IPNetwork] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
        "::/128", "::1/128", "64:ff9b::/96", "fc00::/7", "fe80::/10", "ff00::/8",
    ].compactMap { IPNetwork($0) }

    /// Loopback only (127.0.0.0/8 and ::1).
    public static let loopback: [IPNetwork] = ["127.0.0.0/8", "::1/128"].compactMap { IPNetwork($0) }
}
