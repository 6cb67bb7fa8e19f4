import Foundation

/// Comparisons whose running time does not depend on where two secrets first differ.
public enum ConstantTime {
    /// Compares two byte sequences without an early exit; only the lengths may leak, which is
    /// acceptable because callers compare fixed-size digests, MACs and encoded hashes.
    public static func equals<A: DataProtocol, B: DataProtocol>(_ lhs: A, _ rhs: B) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) {
            difference |= left ^ right
        }
        return difference == 0
    }

    /// Compares the UTF-8 bytes of two strings (e.g. base64url-encoded hashes or thumbprints).
    public static func equals(_ lhs: String, _ rhs: String) -> Bool {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in rhs.withUTF8 { right in equals(left, right) } }
    }

    private static func equals(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<lhs.count {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }
}
