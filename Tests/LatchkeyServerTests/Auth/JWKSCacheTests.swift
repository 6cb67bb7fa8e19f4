import Foundation
import Logging
import Synchronization
import Testing

@testable import LatchkeyCore
@testable import LatchkeyServer

@Suite struct JWKSCacheTests {
    /// A fetch closure serving `keys` (or failing), counting calls.
    final class Endpoint: Sendable {
        let keys: Mutex<[JWK]>
        let failing = Atomic<Bool>(false)
        let calls = Atomic<Int>(0)
        init(_ keys: [JWK]) { self.keys = Mutex(keys) }

        var count: Int { calls.load(ordering: .relaxed) }

        func fetch(_ issuer: String) async throws -> JWKSet {
            calls.add(1, ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(20))
            struct Down: Error {}
            if failing.load(ordering: .relaxed) { throw Down() }
            return JWKSet(keys: keys.withLock { $0 })
        }
    }

    /// Fetch outcomes the cache reported.
    final class Outcomes: Sendable {
        let values = Mutex<[Bool]>([])
        var all: [Bool] { values.withLock { $0 } }
    }

    let issuer = "https://auth.example.com/t/acme"

    func make(_ endpoint: Endpoint, clock: FixedWallClock, refreshed: Outcomes = Outcomes()) -> JWKSCache {
        JWKSCache(
            maxAge: 300, minimumRefreshInterval: 30, clock: clock, logger: .authTests,
            observer: { _, succeeded in refreshed.values.withLock { $0.append(succeeded) } },
            fetch: { try await endpoint.fetch($0) })
    }

    @Test func concurrentFirstUsesShareOneFetchAndKnownKidsAreServedFromMemory() async throws {
        let k1 = try TokenMinter(kid: "k1").jwk
        let endpoint = Endpoint([k1])
        let cache = make(endpoint, clock: FixedWallClock(unixSeconds: 1_000))
        let results = try await withThrowingTaskGroup(of: [JWK].self) { group in
            for _ in 0..<20 { group.addTask { try await cache.keys(issuer: issuer, kid: "k1") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0 == [k1] })
        #expect(endpoint.count == 1)
        for _ in 0..<10 { _ = try await cache.keys(issuer: issuer, kid: "k1") }
        #expect(endpoint.count == 1)
        let every = try await cache.keys(issuer: issuer, kid: nil)
        #expect(every == [k1])
    }

    @Test func unknownKidRefreshesAtMostOncePerInterval() async throws {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let k1 = try TokenMinter(kid: "k1").jwk
        let k2 = try TokenMinter(kid: "k2").jwk
        let endpoint = Endpoint([k1])
        let cache = make(endpoint, clock: clock)
        _ = try await cache.keys(issuer: issuer, kid: "k1")
        endpoint.keys.withLock { $0.append(k2) }
        #expect(try await cache.keys(issuer: issuer, kid: "k2").isEmpty, "inside the interval: no refetch")
        #expect(endpoint.count == 1)
        clock.advance(by: 30)
        #expect(try await cache.keys(issuer: issuer, kid: "k2") == [k2])
        #expect(endpoint.count == 2)
        for _ in 0..<10 { #expect(try await cache.keys(issuer: issuer, kid: "nope").isEmpty) }
        #expect(endpoint.count == 2)
    }

    @Test func staleKeysServeWhileTheIssuerIsDownAndMissingKeysAreUnavailable() async throws {
        let clock = FixedWallClock(unixSeconds: 1_000)
        let k1 = try TokenMinter(kid: "k1").jwk
        let endpoint = Endpoint([k1])
        let refreshed = Outcomes()
        let cache = make(endpoint, clock: clock, refreshed: refreshed)

        endpoint.failing.store(true, ordering: .relaxed)
        await #expect(throws: AccessTokenError.keysUnavailable) { try await cache.keys(issuer: issuer, kid: "k1") }
        // While nothing is cached, retries are paced (one per second), not one per request.
        await #expect(throws: AccessTokenError.keysUnavailable) { try await cache.keys(issuer: issuer, kid: "k1") }
        #expect(endpoint.count == 1)
        clock.advance(by: 1)
        endpoint.failing.store(false, ordering: .relaxed)
        #expect(try await cache.keys(issuer: issuer, kid: "k1") == [k1])

        endpoint.failing.store(true, ordering: .relaxed)
        clock.advance(by: 301)
        #expect(try await cache.keys(issuer: issuer, kid: "k1") == [k1], "stale-while-error")
        #expect(refreshed.all == [false, true, false])
        let calls = endpoint.count
        #expect(try await cache.keys(issuer: issuer, kid: "k1") == [k1])
        #expect(endpoint.count == calls, "a failed refresh is not retried on every request")
    }
}
