import Foundation
import Testing

@testable import LatchkeyCore
@testable import LatchkeyServer

@Suite struct AccessTokenCacheTests {
    static let now: Int64 = 1_763_800_000

    @Test func hotTokensCostNoSecondVerificationUntilExpiry() async throws {
        let clock = FixedWallClock(unixSeconds: Self.now)
        let minter = try TokenMinter()
        let keys = InMemoryKeySource([minter.jwk])
        let verifier = try AccessTokenVerifier(
            configuration: .init(issuers: [TokenMinter.issuer], audiences: [TokenMinter.audience], clockSkewSeconds: 5),
            keySource: keys, clock: clock)
        let cache = AccessTokenCache(maxEntries: 10, clock: clock)
        let token = try minter.token(now: Self.now, ["exp": Self.now + 60])
        for _ in 0..<5 { _ = try await cache.verify(token, with: verifier) }
        #expect(keys.lookupCount == 1)
        #expect(cache.count == 1)
        clock.advance(by: 64)  // exp + skew - 1: still valid
        _ = try await cache.verify(token, with: verifier)
        #expect(keys.lookupCount == 1)
        clock.advance(by: 1)
        await #expect(throws: AccessTokenError.expired) { try await cache.verify(token, with: verifier) }
        #expect(cache.count == 0, "expired entries are dropped when met")
        // Failures are not cached: each costs a verification.
        let bad = try minter.token(now: Self.now, ["aud": "elsewhere"])
        for _ in 0..<3 {
            await #expect(throws: AccessTokenError.wrongAudience) { try await cache.verify(bad, with: verifier) }
        }
        #expect(keys.lookupCount == 5)
    }

    @Test func theCacheStaysWithinItsBound() async throws {
        let clock = FixedWallClock(unixSeconds: Self.now)
        let minter = try TokenMinter()
        let verifier = try AccessTokenVerifier(
            configuration: .init(issuers: [TokenMinter.issuer], audiences: [TokenMinter.audience]),
            keySource: InMemoryKeySource([minter.jwk]), clock: clock)
        let cache = AccessTokenCache(maxEntries: 32, clock: clock)
        for _ in 0..<200 { _ = try await cache.verify(try minter.token(now: Self.now), with: verifier) }
        #expect(cache.count <= 32)
        #expect(cache.evictions >= 168)
    }

    /// Tokens expiring as fast as new ones arrive: a full cache whose sweep frees a single expired token must
    /// still make room for a sixteenth of its bound, or every new token would pay for a pass over the cache.
    @Test func aSweepThatFreesLittleStillMakesRoomForASixteenth() async throws {
        let clock = FixedWallClock(unixSeconds: Self.now)
        let minter = try TokenMinter()
        let verifier = try AccessTokenVerifier(
            configuration: .init(issuers: [TokenMinter.issuer], audiences: [TokenMinter.audience], clockSkewSeconds: 0),
            keySource: InMemoryKeySource([minter.jwk]), clock: clock)
        let cache = AccessTokenCache(maxEntries: 32, clock: clock)
        // One token expiring every second, the cache exactly full.
        for index in 0..<32 {
            _ = try await cache.verify(
                try minter.token(now: Self.now, ["exp": Self.now + 1 + Int64(index)]), with: verifier)
        }
        #expect(cache.count == 32)
        #expect(cache.evictions == 0)
        clock.advance(by: 1)  // the first token has expired
        _ = try await cache.verify(try minter.token(now: Self.now + 1, ["exp": Self.now + 600]), with: verifier)
        // The sweep freed the expired token, then made room for two (32 / 16) before the new one went in.
        #expect(cache.evictions == 1)
        #expect(cache.count == 31)
        // So the next new token finds room without sweeping or evicting.
        _ = try await cache.verify(try minter.token(now: Self.now + 1, ["exp": Self.now + 600]), with: verifier)
        #expect(cache.evictions == 1)
        #expect(cache.count == 32)
    }
}
