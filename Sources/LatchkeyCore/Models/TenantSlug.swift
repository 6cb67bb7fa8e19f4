import Foundation

/// A validated tenant identifier, `[a-z0-9][a-z0-9-]{0,62}`, as it appears in `/t/{tenant}` URLs.
///
/// Only a value that passed validation can exist, so code holding a `TenantSlug` can put it in a
/// URL path, a Kafka key or a `SET LOCAL` without escaping.
public struct TenantSlug: RawRepresentable, Hashable, Comparable, Sendable, LosslessStringConvertible {
    public static let maxLength = 63

    public let rawValue: String

    public init?(rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    public init?(_ description: String) {
        self.init(rawValue: description)
    }

    public var description: String { rawValue }

    /// Whether `candidate` is a well-formed slug.
    public static func isValid(_ candidate: String) -> Bool {
        let bytes = candidate.utf8
        guard let first = bytes.first, bytes.count <= maxLength, isLowerAlphanumeric(first) else {
            return false
        }
        return bytes.allSatisfy { isLowerAlphanumeric($0) || $0 == UInt8(ascii: "-") }
    }

    public static func < (lhs: TenantSlug, rhs: TenantSlug) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    private static func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

extension TenantSlug: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let slug = TenantSlug(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription:
                    "\"\(raw)\" is not a tenant slug: 1 to 63 characters of a-z, 0-9 and '-', not starting with '-'")
        }
        self = slug
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
