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

    @Test func expiredEntriesAreReclaimedBeforeAnyLiveOneIsEvicted() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 100, clock: clock)
        for index in 0..<100 {
            #expect(await cache.insertIfAbsent(jkt: "k", jti: "\(index)", expiresAt: 1_000 + Int64(index % 10)))
        }
        clock.set(.init(timeIntervalSince1970: 1_005))
        // 50 entries expired at 1_004 or earlier; 50 fresh ones fit without evicting a live entry.
        for index in 0..<50 {
            #expect(await cache.insertIfAbsent(jkt: "k", jti: "fresh\(index)", expiresAt: 1_065))
        }
        #expect(cache.count == 100)
        #expect(cache.evictions == 0)
        // The entries still live are still refused.
        for index in 0..<100 where index % 10 >= 5 {
            #expect(await !cache.insertIfAbsent(jkt: "k", jti: "\(index)", expiresAt: 1_000 + Int64(index % 10)))
        }
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "fresh7", expiresAt: 1_065))
    }

    /// Proofs of one second all expire together; the insert after that second must not reclaim them all
    /// at once (a pause of milliseconds for a full cache), yet they stop counting as replays at once.
    @Test func eachInsertReclaimsABoundedNumberOfExpiredEntries() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 20_000, clock: clock)
        for index in 0..<10_000 {
            #expect(await cache.insertIfAbsent(jkt: "k", jti: "\(index)", expiresAt: 1_030))
        }
        clock.set(.init(timeIntervalSince1970: 1_031))
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "next", expiresAt: 1_090))
        #expect(cache.count == 10_001 - InMemoryDPoPReplayCache.sweepBudget)
        // An expired pair not reclaimed yet is absent: storing it again is not a replay.
        #expect(await cache.insertIfAbsent(jkt: "k", jti: "9999", expiresAt: 1_090))
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "9999", expiresAt: 1_090))
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "next", expiresAt: 1_090))
        // Reclaiming outpaces inserting: the backlog of expired entries drains while traffic goes on.
        for index in 0..<4_000 {
            #expect(await cache.insertIfAbsent(jkt: "k", jti: "later\(index)", expiresAt: 1_090))
        }
        #expect(cache.count == 4_002)
        #expect(cache.evictions == 0)
        // Still refused after the backlog drained, including the pair re-stored over its expired entry.
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "9999", expiresAt: 1_090))
        #expect(await !cache.insertIfAbsent(jkt: "k", jti: "later0", expiresAt: 1_090))
    }

    @Test func aFullCacheStaysWithinItsBoundWhenKeysAreStoredAgainAfterExpiry() async {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let cache = InMemoryDPoPReplayCache(maxEntries: 10, clock: clock)
        for round in 0..<50 {
            clock.set(.init(timeIntervalSince1970: TimeInterval(1_000 + round * 2)))
            for index in 0..<10 {
                #expect(
                    await cache.insertIfAbsent(jkt: "k", jti: "\(index)", expiresAt: 1_000 + Int64(round * 2)))
            }
            #expect(cache.count <= 10)
        }
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
