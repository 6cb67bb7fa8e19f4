#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import Shared

/// Addresses (single IPs or CIDR blocks) whose `Forwarded` / `X-Forwarded-*` headers are believed.
/// Everyone else's are ignored and removed before forwarding.
struct TrustedProxies: Sendable {
    /// One network: its address bytes (4 or 16) and prefix length.
    struct Block: Sendable, Equatable {
        let bytes: [UInt8]
        let prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
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
    }

    let blocks: [Block]

    static let none = TrustedProxies(blocks: [])

    private init(blocks: [Block]) {
        self.blocks = blocks
    }

    init(_ values: [String]) throws {
        blocks = try values.map { value in
            let parts = value.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bytes = Self.parseAddress(parts[0]) else {
                throw ConfigurationError("DPOP_TRUSTED_PROXIES: \(value) is not an IP address or CIDR block")
            }
            let maximum = bytes.count * 8
            var prefix = maximum
            if parts.count == 2 {
                guard let parsed = Int(parts[1]), (0...maximum).contains(parsed) else {
                    throw ConfigurationError("DPOP_TRUSTED_PROXIES: \(value) has an invalid prefix length")
                }
                prefix = parsed
            }
            return Block(bytes: bytes, prefixLength: prefix)
        }
    }

    func contains(_ address: SocketAddress?) -> Bool {
        guard !blocks.isEmpty, let bytes = address.flatMap(Self.addressBytes) else { return false }
        return blocks.contains { $0.contains(bytes) }
    }

    /// The peer's address bytes; IPv4-mapped IPv6 peers count as IPv4.
    static func addressBytes(_ address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
            return bytes
        default:
            return nil
        }
    }

    static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}
