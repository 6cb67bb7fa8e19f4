import Foundation
import Testing

@testable import LatchkeyCore

@Suite("ConstantTime")
struct ConstantTimeTests {
    @Test func comparesBytesAndStrings() {
        #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2] as [UInt8]))
        #expect(ConstantTime.equals("abc", "abc"))
        #expect(!ConstantTime.equals("abc", "abd"))
        #expect(ConstantTime.equals("", ""))
    }
}
