import Foundation
import HTTPTypes
import LatchkeyCore

/// `X-Request-Id` values: the header name, and a cheap generator of fresh ids.
public enum RequestIDs {
    /// `X-Request-Id`, built once (a `HTTPField.Name` validates and lower-cases its text on every init).
    public static let headerName = HTTPField.Name("X-Request-Id")!
}

/// Makes request ids shaped like RFC 9562 version-4 UUIDs (lower-case), without a system call per id.
///
/// `UUID()` reads the kernel's random source for every id. Request ids only need to be unique, not
/// secret: each generator is seeded once from the system generator and then steps SplitMix64, whose
/// 64-bit outputs never repeat within a generator. Not thread-safe: keep one per event loop or per
/// connection; where that does not fit, ``RandomUUID`` serves any thread.
public struct RequestIDGenerator {
    private var state: UInt64

    public init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    /// Seeded, for tests.
    init(seed: UInt64) {
        state = seed
    }

    /// The next id, e.g. `3f2b8c1e-9a4d-4f60-b7e2-0c5d9a8f1e23`.
    public mutating func next() -> String {
        let high = ((nextWord() & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000).bigEndian  // version 4
        let low = ((nextWord() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000).bigEndian  // RFC 9562 variant
        let uuid = withUnsafeBytes(of: (high, low)) { $0.loadUnaligned(as: uuid_t.self) }
        return UUID(uuid: uuid).lowercasedString
    }

    /// SplitMix64 (Steele, Lea, Flood 2014): a bijective mix of a Weyl sequence.
    private mutating func nextWord() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
