import Foundation
import LatchkeyCore
import Synchronization

/// The clients whose tokens must be refused, filled from the `ClientRevoked` topic, and single access
/// tokens refused before their expiry, filled from `TokenRevoked` (RFC 7009 revocation, refresh-token
/// reuse, code replay), and disabled users, filled from the `UserDisabled`/`UserEnabled` topic.
///
/// `isLoaded` turns true once the topics' backlog (everything present at start-up) has been read;
/// until then the sidecar refuses to decide (503) rather than let a revoked client through.
///
/// A revoked client or token is remembered only while a token it ended could still pass the other checks
/// (``RevocationRetention``); a revocation that is over already when it is read (at start-up, most of the
/// topic) is not kept at all. Disabled users are remembered until they are enabled again: only an
/// administrator disables a user, so there are never more entries than the tenants' users.
final class RevokedClients: Sendable {
    let retention: RevocationRetention
    private let loaded = Atomic<Bool>(false)
    /// `tenant/client_id` (the Kafka key) of revoked clients.
    private let clients = Mutex(ExpiringKeys())
    /// `tenant/jti` of revoked access tokens.
    private let tokens = Mutex(ExpiringKeys())
    /// `tenant/user_id` (lowercase) of users disabled and not enabled since.
    private let users = Mutex<Set<String>>([])

    init(loaded: Bool = false, retention: RevocationRetention = RevocationRetention()) {
        self.retention = retention
        self.loaded.store(loaded, ordering: .relaxed)
    }

    var isLoaded: Bool { loaded.load(ordering: .acquiring) }
    /// Revoked clients remembered right now.
    var count: Int { clients.withLock { $0.count } }

    func markLoaded() {
        loaded.store(true, ordering: .releasing)
    }

    /// Adds a client revoked at `revokedAt` whose tokens expire by `tokensExpireAt` (when the event says);
    /// false when it was known already (events are replayed at every start) or its tokens are all past.
    @discardableResult
    func insert(tenant: TenantSlug, clientID: String, revokedAt: Date, tokensExpireAt: Date?, now: Date = Date())
        -> Bool
    {
        let key = LatchkeyEventType.kafkaKey(tenant: tenant, clientID: clientID)
        let until = retention.keepUntil(revokedAt: revokedAt, tokensExpireAt: tokensExpireAt)
        let now = RevocationRetention.seconds(now)
        return clients.withLock { $0.insert(key, until: until, now: now) }
    }

    func contains(tenant: TenantSlug, clientID: String) -> Bool {
        let key = LatchkeyEventType.kafkaKey(tenant: tenant, clientID: clientID)
        return clients.withLock { $0.contains(key) }
    }

    /// Refuses the access token `jti` of `tenant`, revoked at `revokedAt`, until it would be refused anyway
    /// (`expiresAt`: when it expires, if the event says).
    func insertToken(tenant: TenantSlug, jti: String, revokedAt: Date, expiresAt: Date?, now: Date = Date()) {
        let key = tenant.rawValue + "/" + jti
        let until = retention.keepUntil(revokedAt: revokedAt, tokensExpireAt: expiresAt)
        let now = RevocationRetention.seconds(now)
        _ = tokens.withLock { $0.insert(key, until: until, now: now) }
    }

    func containsToken(tenant: TenantSlug, jti: String) -> Bool {
        guard !jti.isEmpty else { return false }
        let key = tenant.rawValue + "/" + jti
        return tokens.withLock { $0.contains(key) }
    }

    var revokedTokenCount: Int { tokens.withLock { $0.count } }

    /// Drops clients and tokens nothing is left to refuse of, a bounded number per call so no request waits long
    /// for the lock; true when more remain to drop (inserting drops a few too).
    @discardableResult
    func sweep(now: Date = Date()) -> Bool {
        let now = RevocationRetention.seconds(now)
        let clientsLeft = clients.withLock { $0.sweep(now: now) }
        let tokensLeft = tokens.withLock { $0.sweep(now: now) }
        return clientsLeft || tokensLeft
    }

    /// Drops everything nothing is left to refuse of, in bounded steps with other tasks let run in between.
    func sweepAll() async {
        while sweep(), !Task.isCancelled { await Task.yield() }
    }

    /// Applies `UserDisabled` (true) or `UserEnabled` (false); the topic's order per user decides.
    func setUser(tenant: TenantSlug, userID: UUID, disabled: Bool) {
        let key = tenant.rawValue + "/" + userID.uuidString.lowercased()
        users.withLock { users in
            if disabled { users.insert(key) } else { users.remove(key) }
        }
    }

    /// Whether the token subject `sub` is a disabled user of `tenant` (client-credentials subjects never are).
    func isUserDisabled(tenant: TenantSlug, subject: String) -> Bool {
        guard let user = UUID(uuidString: subject) else { return false }
        let key = tenant.rawValue + "/" + user.uuidString.lowercased()
        return users.withLock { $0.contains(key) }
    }

    var disabledUserCount: Int { users.withLock { $0.count } }
}
