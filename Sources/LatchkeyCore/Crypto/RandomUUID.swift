import Foundation

/// Random (version 4, RFC 9562) UUIDs drawn from ``RandomPool``.
///
/// Foundation's `UUID()` opens, reads and closes the kernel's random device for every id, three system
/// calls, and a grant or a registration makes several ids (request id, token id, event id, client id); the
/// pool asks the kernel once for hundreds of them.
public enum RandomUUID {
    /// A fresh random UUID.
    public static func make() -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { RandomPool.fill($0) }
        uuid.6 = (uuid.6 & 0x0F) | 0x40  // version 4
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(uuid: uuid)
    }

    /// A fresh random UUID in lower case, e.g. `3f2b8c1e-9a4d-4f60-b7e2-0c5d9a8f1e23`.
    public static func string() -> String {
        make().lowercasedString
    }
}

extension UUID {
    /// The UUID in lower case (as PostgreSQL prints UUIDs): `uuidString.lowercased()` in one pass.
    public var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        out[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    out[index] = hexDigit(byte >> 4)
                    out[index + 1] = hexDigit(byte & 0x0F)
                    index += 2
                }
                return index
            }
        }
    }
}

@inline(__always)
private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? nibble + UInt8(ascii: "0") : nibble - 10 + UInt8(ascii: "a")
}
