import Foundation
import Testing

@testable import LatchkeyCore

/// The pool of random bytes: every byte handed out once, across refills, from any thread.
@Suite struct RandomPoolTests {
    @Test func drawsLongerThanThePoolSpanRefillsAndLookUniform() {
        // 10,000 bytes cross at least two refills of 4,096; a byte value may not be missing or dominate.
        let bytes = SecureRandom.bytes(count: 10_000)
        #expect(bytes.count == 10_000)
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        #expect(counts.allSatisfy { $0 > 0 && $0 < 120 })  // mean 39
    }

    @Test func consecutiveDrawsNeverRepeatBytes() {
        // 32-byte secrets taken one after another straddle refills; a repeat would mean a byte handed out twice.
        let secrets = (0..<1_000).map { _ in SecureRandom.bytes(count: 32) }
        #expect(Set(secrets).count == secrets.count)
        #expect(SecureRandom.bytes(count: 0).isEmpty)
    }
}
