import Crypto
import Foundation
import Synchronization

/// Remembers DPoP proof identifiers (per key thumbprint) until their acceptance window closes.
public protocol DPoPReplayCache: Sendable {
    /// Records (`jkt`, `jti`) until `expiresAt` (Unix seconds). Returns true the first time the pair
    /// is seen within its lifetime, false for a replay.
    func insertIfAbsent(jkt: String, jti: String, expiresAt: Int64) async -> Bool
}

/// A bounded in-process replay cache. It sees one replica's traffic only: a proof replayed to
/// another replica is not caught here (the protocol is async so a shared store can implement it).
///
/// Bound: at most `maxEntries` entries. Each entry stores a 32-byte SHA-256 of (jkt, jti) rather
/// than the strings, so its size is fixed whatever the client sends: 40 bytes in the dictionary
/// and 32 in its expiry bucket, about 200 bytes per entry with hash-table slack and array growth
/// (measured: a full 100,000-entry cache adds ≈ 22 MB RSS).
///
/// Every insert costs O(1) amortised, whatever the traffic: proofs of one second all expire in the
/// same second, so reclaiming them all at once would stall the one request that comes next for
/// milliseconds (thousands of removals under the lock, with every other request on the event loop
/// waiting). Instead each insert reclaims at most `sweepBudget` expired entries; an expired entry
/// not yet reclaimed is treated as absent, and a full cache reclaims the soonest-to-expire entry
/// first, so expired entries always go before live ones. Live entries dropped because the cache is
/// full are counted in `evictions` (non-zero means the bound is too small for the traffic).
///
/// Entries are kept in one bucket per expiry second (a proof's expiry is a whole second), so finding
/// the soonest-to-expire entry takes the last key of the earliest bucket: a few memory accesses, where
/// a binary heap of a full cache would walk seventeen levels of a 4 MB array, each a likely cache miss.
public final class InMemoryDPoPReplayCache: DPoPReplayCache {
    /// SHA-256 of the pair, stored inline (no per-entry heap allocation).
    struct Key: Hashable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt64
    }

    struct State {
        var expiries: [Key: Int64] = [:]
        /// Keys by the second they expire at. Every dictionary key is in the bucket of its expiry; a key
        /// stored again after it expired leaves its older bucket entry behind until that bucket is reached.
        var buckets: [Int64: [Key]] = [:]
        /// Min-heap of the seconds that have a bucket (about one per second of the acceptance window).
        var seconds: [Int64] = []
        /// Keys in all buckets, those left behind included.
        var stored = 0
        var evictions: Int = 0

        /// Removes the last key of the earliest bucket.
        mutating func popSoonest() -> (key: Key, expiresAt: Int64)? {
            guard let second = seconds.first, let key = buckets[second]?.popLast() else { return nil }
            stored -= 1
            if buckets[second]?.isEmpty ?? true {
                buckets[second] = nil
                Self.popMin(&seconds)
            }
            return (key, second)
        }

        mutating func append(_ key: Key, expiresAt: Int64) {
            if buckets[expiresAt]?.append(key) == nil {
                buckets[expiresAt] = [key]
                Self.push(expiresAt, into: &seconds)
            }
            stored += 1
        }

        private static func push(_ second: Int64, into heap: inout [Int64]) {
            heap.append(second)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child] < heap[parent] else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        private static func popMin(_ heap: inout [Int64]) {
            let last = heap.removeLast()
            guard !heap.isEmpty else { return }
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count, heap[left] < heap[smallest] { smallest = left }
                if right < heap.count, heap[right] < heap[smallest] { smallest = right }
                guard smallest != parent else { return }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }

    /// Expired entries reclaimed per insert at most: more than one, so reclaiming outpaces inserting.
    static let sweepBudget = 4

    public let maxEntries: Int
    private let clock: any WallClock
    private let state = Mutex(State())

    public init(maxEntries: Int = 100_000, clock: any WallClock = SystemWallClock()) {
        precondition(maxEntries > 0, "maxEntries must be positive")
        self.maxEntries = maxEntries
        self.clock = clock
        // Room for the bound up front: growing a hash table of tens of thousands of entries rehashes
        // them all at once, a pause of milliseconds on the request that happens to trigger it.
        state.withLock { $0.expiries.reserveCapacity(maxEntries) }
    }

    /// Stored entries (for metrics): the live ones plus expired ones not reclaimed yet.
    public var count: Int { state.withLock { $0.expiries.count } }

    /// Entries dropped before expiry because the cache was full (for metrics).
    public var evictions: Int { state.withLock { $0.evictions } }

    public func insertIfAbsent(jkt: String, jti: String, expiresAt: Int64) async -> Bool {
        insertNow(jkt: jkt, jti: jti, expiresAt: expiresAt)
    }

    /// `insertIfAbsent` without suspending (the cache is in-process), for callers on an event loop.
    public func insertNow(jkt: String, jti: String, expiresAt: Int64) -> Bool {
        insert(key: Self.key(jkt: jkt, jti: jti), expiresAt: expiresAt)
    }

    func insert(key: Key, expiresAt: Int64) -> Bool {
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        return state.withLock { state in
            Self.sweep(&state, now: now, budget: Self.sweepBudget)
            // An entry protects through its `expiresAt` second inclusive, matching the verifier's
            // inclusive ±window check.
            if let known = state.expiries[key], known >= now { return false }
            // Already expired: nothing to remember, and it must not push out live entries.
            if expiresAt < now { return true }
            while state.stored >= maxEntries, let victim = state.popSoonest() {
                guard state.expiries[victim.key] == victim.expiresAt else { continue }
                state.expiries[victim.key] = nil
                if victim.expiresAt >= now { state.evictions += 1 }
            }
            state.expiries[key] = expiresAt
            state.append(key, expiresAt: expiresAt)
            return true
        }
    }

    /// Reclaims expired entries, at most `budget` bucket entries per call.
    static func sweep(_ state: inout State, now: Int64, budget: Int) {
        var remaining = budget
        while remaining > 0, let second = state.seconds.first, second < now, let victim = state.popSoonest() {
            if state.expiries[victim.key] == victim.expiresAt { state.expiries[victim.key] = nil }
            remaining -= 1
        }
    }

    static func key(jkt: String, jti: String) -> Key {
        var hasher = SHA256()
        // Length prefix keeps ("ab","c") and ("a","bc") apart.
        var length = UInt64(jkt.utf8.count).bigEndian
        withUnsafeBytes(of: &length) { hasher.update(bufferPointer: $0) }
        var jkt = jkt
        var jti = jti
        jkt.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        jti.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        return hasher.finalize().withUnsafeBytes { raw in
            Key(
                a: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                b: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                c: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                d: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }
}
