import LatchkeyCore
import LatchkeyServer
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Addresses (single IPs or CIDR blocks) whose `Forwarded` / `X-Forwarded-*` headers are believed.
/// Everyone else's are ignored and removed before forwarding.
struct TrustedProxies: Sendable {
    typealias Block = IPNetwork

    let blocks: [Block]

    static let none = TrustedProxies(blocks: [])

    private init(blocks: [Block]) {
        self.blocks = blocks
    }

    init(_ values: [String]) throws {
        blocks = try values.map { value in
            guard let block = IPNetwork(value) else {
                throw ConfigurationError("DPOP_TRUSTED_PROXIES: \(value) is not an IP address or CIDR block")
            }
            return block
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
            return IPNetwork.unmapped(withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) })
        default:
            return nil
        }
    }

    static func parseAddress(_ text: String) -> [UInt8]? { IPNetwork.parseAddress(text) }
}
