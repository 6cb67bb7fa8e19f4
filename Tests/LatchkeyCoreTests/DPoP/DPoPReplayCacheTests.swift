import Foundation
import Testing

@testable import LatchkeyCore

@Suite("DPoPReplayCache")
struct DPoPReplayCacheTests {
    @Test func detectsReplayPerKey() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 10, clock: clock)
        #expect(await cache.insertIfAbsent(jkt: "k1", jti: "a", expiresAt: 1_060))
        #expect(await !cache.insertIfAbsent(jkt: "k1", jti: "a", expiresAt: 1_060))
        #expect(await cache.insertIfAbsent(jkt: "k2", jti: "a", expiresAt: 1_060))
        #expect(await cache.insertIfAbsent(jkt: "k1a", jti: "", expiresAt: 1_060))
        #expect(await cache.insertIfAbsent(jkt: "k1", jti: "a2", expiresAt: 1_060))
        #expect(cache.count == 4)
    }

    @Test func entriesExpireAfterTheirLastValidSecond() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 10, clock: clock)
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "a", expiresAt: 1_060))
        clock.set(.init(timeIntervalSince1970: 1_060))
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "a", expiresAt: 1_060))
        clock.set(.init(timeIntervalSince1970: 1_061))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "other", expiresAt: 1_121))
        #expect(cache.count == 1)
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "a", expiresAt: 1_121))
        #expect(cache.evictions == 0)
    }

    @Test func alreadyExpiredInsertsAreNotStored() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 2, clock: clock)
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "old", expiresAt: 999))
        #expect(cache.count == 0)
    }

    @Test func boundedWithEvictionOfSoonestToExpire() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 3, clock: clock)
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "late", expiresAt: 1_090))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "soon", expiresAt: 1_010))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "mid", expiresAt: 1_050))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "new", expiresAt: 1_060))
        #expect(cache.count == 3)
        #expect(cache.evictions == 1)
        // "soon" was evicted (closest to expiry), the others are still remembered.
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "late", expiresAt: 1_090))
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "mid", expiresAt: 1_050))
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "new", expiresAt: 1_060))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "soon", expiresAt: 1_010))
        #expect(cache.evictions == 2)
    }

    @Test func sweepingExpiredEntriesAvoidsEviction() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 100, clock: clock)
        for index in 0..<100 {
            #expect(await cache.insertIfAbsent(jkt: "k", jti: "\(index)", expiresAt: 1_000 + Int64(index % 10)))
        }
        clock.set(.init(timeIntervalSince1970: 1_005))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "fresh", expiresAt: 1_065))
        #expect(cache.count == 51)
        #expect(cache.evictions == 0)
    }

    @Test func staysBoundedUnderLoad() async {
        let clock = FixedWallClock(unixSeconds: 0)
        let cache = InMemoryDPoPReplayCache(maxEntries: 1_000, clock: clock)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for index in 0..<5_000 {
                        _ = await cache.insertIfAbsent(jkt: "k\(worker)", jti: "\(index)", expiresAt: 60)
                    }
                }
            }
        }
        #expect(cache.count == 1_000)
        #expect(cache.evictions == 19_000)
    }

    @Test func keysDoNotCollideAcrossBoundaries() {
        #expect(InMemoryDPoPReplayCache.key(jkt: "ab", jti: "c") != InMemoryDPoPReplayCache.key(jkt: "a", jti: "bc"))
        #expect(InMemoryDPoPReplayCache.key(jkt: "a", jti: "b") == InMemoryDPoPReplayCache.key(jkt: "a", jti: "b"))
    }
}
