import Foundation
import Testing

@testable import LatchkeyCore

@Suite("WallClock")
struct WallClockTests {
    @Test func fixedClockIsSettableAndAdvances() {
        let clock = FixedWallClock(unixSeconds: 1_000)
        #expect(clock.now() == Date(timeIntervalSince1970: 1_000))
        clock.advance(by: 59)
        #expect(clock.now().timeIntervalSince1970 == 1_059)
        clock.set(Date(timeIntervalSince1970: 42))
        #expect(clock.now().timeIntervalSince1970 == 42)
    }

    @Test func fixedClockIsSafeAcrossTasks() async {
        let clock = FixedWallClock(unixSeconds: 0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { clock.advance(by: 1) } }
        }
        #expect(clock.now().timeIntervalSince1970 == 100)
    }

    @Test func systemClockTracksDate() {
        let before = Date()
        let now = SystemWallClock().now()
        #expect(abs(now.timeIntervalSince(before)) < 5)
    }
}
