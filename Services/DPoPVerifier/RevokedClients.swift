import Foundation
import LatchkeyCore
import Synchronization

/// The clients whose tokens must be refused, filled from the `ClientRevoked` topic, and single access
/// tokens refused before their expiry, filled from `TokenRevoked` (RFC 7009 revocation, refresh-token
/// reuse, code replay), and disabled users, filled from the `UserDisabled`/`UserEnabled` topic.
///
/// `isLoaded` turns true once the topics' backlog (everything present at start-up) has been read;
/// until then the sidecar refuses to decide (503) rather than let a revoked client through. A revoked
/// token is remembered only until it expires: afterwards its signature check refuses it anyway.
final class RevokedClients: Sendable {
    private let keys = Mutex<Set<String>>([])
    private let loaded = Atomic<Bool>(false)
    /// `tenant/jti` → `exp` (Unix seconds) of revoked access tokens; expired entries are swept on insert.
    private let tokens = Mutex<(entries: [String: Int64], nextSweep: Int64)>(([:], 0))
    /// `tenant/user_id` (lowercase) of users disabled and not enabled since.
    private let users = Mutex<Set<String>>([])

    init(loaded: Bool = false) {
        self.loaded.store(loaded, ordering: .relaxed)
    }

    var isLoaded: Bool { loaded.load(ordering: .acquiring) }
    var count: Int { keys.withLock { $0.count } }

    func markLoaded() {
        loaded.store(true, ordering: .releasing)
    }

    /// Adds a client; returns false when it was already known (events are replayed at every start).
    @discardableResult
    func insert(tenant: TenantSlug, clientID: String) -> Bool {
        let key = LatchkeyEventType.kafkaKey(tenant: tenant, clientID: clientID)
        return keys.withLock { $0.insert(key).inserted }
    }

    func contains(tenant: TenantSlug, clientID: String) -> Bool {
        let key = LatchkeyEventType.kafkaKey(tenant: tenant, clientID: clientID)
        return keys.withLock { $0.contains(key) }
    }

    /// Refuses the access token `jti` of `tenant` until `expiresAt` (Unix seconds); nothing to do for a
    /// token that has expired already.
    func insertToken(tenant: TenantSlug, jti: String, expiresAt: Int64, now: Int64) {
        guard expiresAt > now else { return }
        let key = tenant.rawValue + "/" + jti
        tokens.withLock { state in
            state.entries[key] = max(state.entries[key] ?? 0, expiresAt)
            // At most one sweep a minute keeps inserts O(1) amortised and memory bounded by live tokens.
            if now >= state.nextSweep {
                state.entries = state.entries.filter { $0.value > now }
                state.nextSweep = now + 60
            }
        }
    }

    func containsToken(tenant: TenantSlug, jti: String) -> Bool {
        guard !jti.isEmpty else { return false }
        let key = tenant.rawValue + "/" + jti
        return tokens.withLock { $0.entries[key] != nil }
    }

    var revokedTokenCount: Int { tokens.withLock { $0.entries.count } }

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
