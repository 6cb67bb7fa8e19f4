import Shared
import Synchronization

/// The clients whose tokens must be refused, filled from the `ClientRevoked` topic.
///
/// `isLoaded` turns true once the topic's backlog (everything present at start-up) has been read;
/// until then the sidecar refuses to decide (503) rather than let a revoked client through.
final class RevokedClients: Sendable {
    private let keys = Mutex<Set<String>>([])
    private let loaded = Atomic<Bool>(false)

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
}
