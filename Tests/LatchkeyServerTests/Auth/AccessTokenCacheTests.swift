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
}
