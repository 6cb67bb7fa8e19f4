import Testing

@testable import DPoPVerifier

/// Revoked clients and tokens leave, soonest first, a bounded number per step: reclaiming never passes
/// over every entry at once (that would hold up the event loop it runs on).
@Suite struct ExpiringKeysTests {
    @Test func entriesLeaveSoonestFirstAndABoundedNumberPerSweep() {
        var keys = ExpiringKeys()
        let total = 2 * ExpiringKeys.sweepBudget + 10
        for index in 0..<total {
            let new = keys.insert("k\(index)", until: 100 + Int64(index % 3), now: 0)
            #expect(new)
        }
        do {
            let new = keys.insert("late", until: 500, now: 0)
            #expect(new)
        }
        #expect(keys.count == total + 1)

        var more = keys.sweep(now: 50)
        #expect(!more, "nothing has passed")
        #expect(keys.count == total + 1)
        // Everything has passed: one budget's worth leaves per sweep, which says whether more remain.
        more = keys.sweep(now: 1_000)
        #expect(more && keys.count == total + 1 - ExpiringKeys.sweepBudget)
        more = keys.sweep(now: 1_000)
        #expect(more && keys.count == total + 1 - 2 * ExpiringKeys.sweepBudget)
        more = keys.sweep(now: 1_000)
        #expect(!more)
        #expect(keys.count == 0)
    }

    @Test func aKeyKeepsItsLatestMomentAndSweepsStopAtLiveEntries() {
        var keys = ExpiringKeys()
        do {
            let new = keys.insert("a", until: 10, now: 0)
            #expect(new)
        }
        do {
            let new = keys.insert("a", until: 30, now: 0)
            #expect(!new, "known already: the later moment is kept")
        }
        do {
            let new = keys.insert("a", until: 20, now: 0)
            #expect(!new, "an earlier moment never shortens it")
        }
        do {
            let new = keys.insert("b", until: 15, now: 0)
            #expect(new)
        }
        do {
            let new = keys.insert("c", until: 5, now: 5)
            #expect(!new, "a moment that has passed is not kept")
        }

        keys.sweep(now: 10)  // a's first moment has passed, but a was extended
        #expect(keys.contains("a"))
        #expect(keys.contains("b"))
        keys.sweep(now: 15)
        #expect(!keys.contains("b"))
        #expect(keys.contains("a"))
        // Inserting reclaims too, a few at a time.
        do {
            let new = keys.insert("d", until: 100, now: 30)
            #expect(new)
        }
        #expect(!keys.contains("a"))
        #expect(keys.count == 1)
    }
}
