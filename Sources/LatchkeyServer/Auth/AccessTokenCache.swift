import Crypto
import Foundation
import LatchkeyCore
import Synchronization

/// Remembers verified access tokens by SHA-256 of the token until their `exp`, so a token seen
/// again costs one hash instead of a signature check. Only successes are cached; revocation and
/// DPoP binding are still checked by the caller on every request.
///
/// Bound: at most `maxEntries` tokens. When full, expired entries are swept, then arbitrary entries are
/// dropped (counted in `evictions`) until a sixteenth of the bound is free, which keeps inserts amortised
/// O(1) whatever the traffic.
public final class AccessTokenCache: Sendable {
    struct Key: Hashable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt64
    }

    /// A cached token and its RFC 9449 `ath` (base64url of the same SHA-256 the key is made of), so a
    /// DPoP proof's `ath` check costs no hashing of the token per request.
    public struct Entry: Sendable {
        public let token: VerifiedAccessToken
        public let accessTokenHash: String
    }

    private struct State {
        var entries: [Key: Entry] = [:]
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
        try await verifyEntry(token, with: verifier).token
    }

    /// `verify`, with the token's `ath`.
    public func verifyEntry(_ token: String, with verifier: AccessTokenVerifier) async throws(AccessTokenError)
        -> Entry
    {
        let digest = Self.digest(token)
        let key = Self.key(digest)
        let oldestValidExpiry = oldestValidExpiry(clockSkewSeconds: verifier.configuration.clockSkewSeconds)
        if let hit = lookup(key, oldestValidExpiry: oldestValidExpiry) { return hit }
        let verified = try await verifier.verify(token)
        let entry = Entry(token: verified, accessTokenHash: Base64URL.encode(digest))
        insert(entry, key: key, oldestValidExpiry: oldestValidExpiry)
        return entry
    }

    /// The cached, unexpired result for `token`, without verifying anything.
    public func cached(_ token: String, clockSkewSeconds: Int64) -> VerifiedAccessToken? {
        cachedEntry(token, clockSkewSeconds: clockSkewSeconds)?.token
    }

    /// `cached`, with the token's `ath`.
    public func cachedEntry(_ token: String, clockSkewSeconds: Int64) -> Entry? {
        lookup(Self.key(Self.digest(token)), oldestValidExpiry: oldestValidExpiry(clockSkewSeconds: clockSkewSeconds))
    }

    private func oldestValidExpiry(clockSkewSeconds: Int64) -> Int64 {
        Int64(clock.now().timeIntervalSince1970.rounded(.down)) - clockSkewSeconds
    }

    private func lookup(_ key: Key, oldestValidExpiry: Int64) -> Entry? {
        state.withLock { state in
            guard let cached = state.entries[key] else { return nil }
            guard cached.token.expiresAt > oldestValidExpiry else {
                state.entries[key] = nil
                return nil
            }
            return cached
        }
    }

    private func insert(_ entry: Entry, key: Key, oldestValidExpiry: Int64) {
        state.withLock { state in
            if state.entries.count >= maxEntries, state.entries[key] == nil {
                state.entries = state.entries.filter { $0.value.token.expiresAt > oldestValidExpiry }
                // Each O(n) sweep leaves room for a sixteenth of the bound: were it to free only the one
                // token that just expired, the next new token would sweep again, and tokens expiring as
                // fast as new ones arrive would cost every new token a pass over the whole cache.
                let room = max(1, maxEntries / 16)
                let excess = state.entries.count - (maxEntries - room)
                if excess > 0 {
                    for victim in Array(state.entries.keys.prefix(excess)) { state.entries[victim] = nil }
                    state.evictions += excess
                }
            }
            state.entries[key] = entry
        }
    }

    private static func digest(_ token: String) -> SHA256Digest {
        var token = token
        return token.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
    }

    private static func key(_ digest: SHA256Digest) -> Key {
        digest.withUnsafeBytes { raw in
            Key(
                a: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                b: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                c: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                d: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }
}
