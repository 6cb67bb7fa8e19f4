import Testing

@testable import LatchkeyCore

@Suite struct CPUAffinityTests {
    @Test(
        arguments: [
            ("0", 1), ("0-1", 2), ("0-3,8,10-11", 7), (" 2 ", 1), ("", nil), ("3-1", nil), ("a", nil), ("0-1-2", nil),
            ("1,", 1),
        ] as [(String, Int?)])
    func countsKernelCPULists(list: String, expected: Int?) {
        #expect(CPUAffinity.count(list: Substring(list)) == expected, "\(list)")
    }

    @Test func readsThisProcessAffinity() throws {
        let allowed = try #require(CPUAffinity.allowedCPUCount())
        #expect(allowed >= 1)
    }
}
