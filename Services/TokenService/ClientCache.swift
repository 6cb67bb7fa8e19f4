import LatchkeyPersistence

/// Client records the token endpoint authenticated recently, so a client_credentials grant needs no query
/// of its own to read its client. PostgreSQL notifies every change to a client (payload: tenant and client
/// id), which drops its record here. Nothing is granted on a cached record alone: the grant's
/// statement re-checks that the client is still active with the same secret.
final class ClientCache: Sendable {
    static let channel = "latchkey_clients"

    private struct Key: Hashable, Sendable {
        let tenant: String
        let clientID: String
    }

    private let records: NotifiedCache<Key, StoredClient>

    init(ttl: Duration = .seconds(30), maximumEntries: Int = 10_000) {
        records = NotifiedCache(ttl: ttl, maximumEntries: maximumEntries)
    }

    var count: Int { records.count }

    /// The current generation, to pass to ``store(_:tenant:readAt:)`` for a record read after this call.
    var generation: UInt64 { records.generation }

    func client(tenant: String, clientID: String) -> StoredClient? {
        records.value(for: Key(tenant: tenant, clientID: clientID))
    }

    func store(_ client: StoredClient, tenant: String, readAt generation: UInt64) {
        records.store(client, for: Key(tenant: tenant, clientID: client.clientID), readAt: generation)
    }

    func invalidate(tenant: String, clientID: String) {
        records.invalidate(Key(tenant: tenant, clientID: clientID))
    }

    func setListening(_ listening: Bool) { records.setListening(listening) }

    /// What keeps this cache in step with the `clients` table.
    var subscription: ChangeNotificationListener.Subscription {
        ChangeNotificationListener.Subscription(
            channel: Self.channel, listening: { self.setListening($0) },
            changed: { payload in
                let parts = payload.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { return }
                self.invalidate(tenant: String(parts[0]), clientID: String(parts[1]))
            })
    }
}
