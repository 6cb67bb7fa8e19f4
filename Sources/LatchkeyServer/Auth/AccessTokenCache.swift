import Crypto
import Foundation
import LatchkeyCore
import Synchronization

/// Remembers verified access tokens by SHA-256 of the token until their `exp`, so a token seen
/// again costs one hash instead of a signature check. Only successes are cached; revocation and
/// DPoP binding are still checked by the caller on every request.
///
/// Bound: at most `maxEntries` tokens. When full, expired entries are swept; if that frees nothing,
/// an arbitrary sixteenth of the entries is dropped (counted in `evictions`), which keeps inserts
/// amortised O(1) whatever the traffic.
public final class AccessTokenCache: Sendable {
    struct Key: Hashable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt64
    }

    private struct State {
        var entries: [Key: VerifiedAccessToken] = [:]
        var evictions = 0
    }

    public let maxEntries: Int
    private let clock: any WallClock
    private let state = Mutex(State())

    public init(maxEntries: Int = 10_000, clock: any WallClock = SystemWallClock()) {
        precondition(maxEntries > 0, "maxEntries must be positive")
        self.maxEntries = maxEntries
        self.clock = clock
    }

    /// Cached tokens (for metrics).
    public var count: Int { state.withLock { $0.entries.count } }
    /// Tokens dropped before their expiry because the cache was full (for metrics).
    public var evictions: Int { state.withLock { $0.evictions } }

    /// The cached result for `token`, or `verifier`'s verdict (cached when it is a success).
    public func verify(_ token: String, with verifier: AccessTokenVerifier) async throws(AccessTokenError)
        -> VerifiedAccessToken
    {
        let key = Self.key(token)
        let oldestValidExpiry = oldestValidExpiry(clockSkewSeconds: verifier.configuration.clockSkewSeconds)
        if let hit = lookup(key, oldestValidExpiry: oldestValidExpiry) { return hit }
        let verified = try await verifier.verify(token)
        insert(verified, key: key, oldestValidExpiry: oldestValidExpiry)
        return verified
    }

    /// The cached, unexpired result for `token`, without verifying anything.
    public func cached(_ token: String, clockSkewSeconds: Int64) -> VerifiedAccessToken? {
        lookup(Self.key(token), oldestValidExpiry: oldestValidExpiry(clockSkewSeconds: clockSkewSeconds))
    }

    private func oldestValidExpiry(clockSkewSeconds: Int64) -> Int64 {
        Int64(clock.now().timeIntervalSince1970.rounded(.down)) - clockSkewSeconds
    }

    private func lookup(_ key: Key, oldestValidExpiry: Int64) -> VerifiedAccessToken? {
        state.withLock { state in
            guard let cached = state.entries[key] else { return nil }
            guard cached.expiresAt > oldestValidExpiry else {
                state.entries[key] = nil
                return nil
            }
            return cached
        }
    }

    private func insert(_ token: VerifiedAccessToken, key: Key, oldestValidExpiry: Int64) {
        state.withLock { state in
            if state.entries.count >= maxEntries, state.entries[key] == nil {
                state.entries = state.entries.filter { $0.value.expiresAt > oldestValidExpiry }
                if state.entries.count >= maxEntries {
                    let victims = Array(state.entries.keys.prefix(max(1, maxEntries / 16)))
                    for victim in victims { state.entries[victim] = nil }
                    state.evictions += victims.count
                }
            }
            state.entries[key] = token
        }
    }

    static func key(_ token: String) -> Key {
        var token = token
        return token.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }.withUnsafeBytes { raw in
            Key(
                a: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                b: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                c: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                d: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }
}
