import Foundation
import LatchkeyCore
import Logging

/// Caches each issuer's JWKS in memory: fetched on first use, refreshed when older than `maxAge`
/// or when a token names an unknown `kid` (at most once per `minimumRefreshInterval` per issuer,
/// so a flood of made-up `kid`s costs one fetch), and kept when a refresh fails (stale-while-error).
/// Concurrent callers share one fetch per issuer.
public actor JWKSCache: AccessTokenKeySource {
    /// Fetches the current key set of an issuer (e.g. via its discovery document).
    public typealias Fetch = @Sendable (_ issuer: String) async throws -> JWKSet
    /// Told about every fetch attempt (for metrics).
    public typealias Observer = @Sendable (_ issuer: String, _ succeeded: Bool) -> Void

    private struct Entry {
        var keys: JWKSet?
        var fetchedAt: Date = .distantPast
        var attemptedAt: Date = .distantPast
        var inFlight: Task<JWKSet, any Error>?
    }

    public let maxAge: TimeInterval
    public let minimumRefreshInterval: TimeInterval
    private let fetch: Fetch
    private let observer: Observer?
    private let clock: any WallClock
    private let logger: Logger
    private var entries: [String: Entry] = [:]

    public init(
        maxAge: TimeInterval = 300, minimumRefreshInterval: TimeInterval = 30, clock: any WallClock = SystemWallClock(),
        logger: Logger, observer: Observer? = nil, fetch: @escaping Fetch
    ) {
        self.maxAge = maxAge
        self.minimumRefreshInterval = minimumRefreshInterval
        self.fetch = fetch
        self.observer = observer
        self.clock = clock
        self.logger = logger
    }

    public func keys(issuer: String, kid: String?) async throws(AccessTokenError) -> [JWK] {
        let now = clock.now()
        let entry = entries[issuer] ?? Entry()
        var keys = entry.keys
        let sinceAttempt = now.timeIntervalSince(entry.attemptedAt)
        let due: Bool
        if keys == nil {
            // Nothing to serve from: retry soon, but not once per request while the issuer is down.
            due = sinceAttempt >= min(minimumRefreshInterval, Self.missingKeysRetryInterval)
        } else if now.timeIntervalSince(entry.fetchedAt) >= maxAge {
            due = sinceAttempt >= minimumRefreshInterval
        } else if let kid, !Self.contains(keys, kid: kid) {
            due = sinceAttempt >= minimumRefreshInterval
        } else {
            due = false
        }
        // Callers that cannot be served from the cache also wait for a fetch already under way.
        let unservable = keys == nil || kid.map { !Self.contains(keys, kid: $0) } ?? false
        if due || (unservable && entry.inFlight != nil) {
            keys = await refresh(issuer) ?? keys
        }
        guard let keys else { throw .keysUnavailable }
        guard let kid else { return keys.keys }
        return keys.keys.filter { $0.kid == kid }
    }

    /// Drops every cached key set (tests, key-compromise drills).
    public func invalidate() {
        entries.removeAll()
    }

    private static let missingKeysRetryInterval: TimeInterval = 1

    /// Most keys kept from one JWKS (a tenant publishes at most three: staged, active, retiring).
    public static let maximumKeys = 16

    /// The keys of `set` that can verify a token: public, `use` absent or `sig`, a declared and
    /// implemented `alg` that fits the key type, and a key that passes every size and curve check
    /// (RSA 2048…8192 bits). Everything else is dropped once here instead of failing on each token.
    public static func verificationKeys(in set: JWKSet) -> JWKSet {
        let usable = set.keys.filter { jwk in
            guard let name = jwk.alg, let algorithm = JWSAlgorithm(parsing: name),
                (try? algorithm.validate(jwk, requireDeclaredAlgorithm: true)) != nil
            else { return false }
            return (try? JWSPublicKey(jwk: jwk)) != nil
        }
        return JWKSet(keys: Array(usable.prefix(maximumKeys)))
    }

    private static func contains(_ keys: JWKSet?, kid: String) -> Bool {
        keys?.keys.contains { $0.kid == kid } ?? false
    }

    /// The fresh key set, or nil when the fetch failed (the caller keeps what it had).
    private func refresh(_ issuer: String) async -> JWKSet? {
        let task: Task<JWKSet, any Error>
        if let running = entries[issuer]?.inFlight {
            task = running
        } else {
            let fetch = self.fetch
            task = Task { try await fetch(issuer) }
            entries[issuer, default: Entry()].inFlight = task
            entries[issuer, default: Entry()].attemptedAt = clock.now()
        }
        do {
            let keys = try await task.value
            finish(issuer, task: task, keys: keys)
            return keys
        } catch {
            finish(issuer, task: task, keys: nil)
            logger.warning(
                "JWKS refresh failed; keeping cached keys",
                metadata: [
                    "issuer": "\(issuer)", "error": "\(error)",
                ])
            return nil
        }
    }

    /// Records a fetch's outcome once (several waiters may share `task`).
    private func finish(_ issuer: String, task: Task<JWKSet, any Error>, keys: JWKSet?) {
        guard var entry = entries[issuer], entry.inFlight == task else { return }
        entry.inFlight = nil
        if let keys {
            entry.keys = Self.verificationKeys(in: keys)
            entry.fetchedAt = clock.now()
        }
        entries[issuer] = entry
        observer?(issuer, keys != nil)
    }
}
