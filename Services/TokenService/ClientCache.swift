import LatchkeyPersistence
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Client records the token endpoint authenticated recently, so a client_credentials grant needs no query
/// of its own to read its client. PostgreSQL notifies every change to a client (``ClientChangeListener``),
/// which drops its record here; `ttl` bounds how long a record can outlive a notification that never
/// came. Nothing is granted on a cached record alone: the grant's statement re-checks that the client is
/// still active with the same secret.
final class ClientCache: Sendable {
    private struct Key: Hashable {
        let tenant: String
        let clientID: String
    }

    private struct Entry {
        let client: StoredClient
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Advanced by every invalidation: a record read before one is not stored after it.
        var generation: UInt64 = 0
        /// Whether changes are being heard; records are neither served nor kept otherwise.
        var listening = false
    }

    let ttl: Duration
    let maximumEntries: Int
    private let state = Mutex(State())

    init(ttl: Duration = .seconds(30), maximumEntries: Int = 10_000) {
        self.ttl = ttl
        self.maximumEntries = maximumEntries
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// The current generation, to pass to ``store(_:tenant:readAt:)`` for a record read after this call.
    var generation: UInt64 { state.withLock { $0.generation } }

    func client(tenant: String, clientID: String) -> StoredClient? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard state.listening, let entry = state.entries[Key(tenant: tenant, clientID: clientID)],
                entry.expires > now
            else {
                return nil
            }
            return entry.client
        }
    }

    /// Keeps `client`, read from the database after ``generation`` was `readAt`, unless a change was
    /// notified since (the record may predate it).
    func store(_ client: StoredClient, tenant: String, readAt generation: UInt64) {
        let expires = ContinuousClock.now + ttl
        state.withLock { state in
            guard state.listening, state.generation == generation else { return }
            if state.entries.count >= maximumEntries { state.entries.removeAll(keepingCapacity: true) }
            state.entries[Key(tenant: tenant, clientID: client.clientID)] = Entry(client: client, expires: expires)
        }
    }

    func invalidate(tenant: String, clientID: String) {
        state.withLock { state in
            state.generation &+= 1
            state.entries[Key(tenant: tenant, clientID: clientID)] = nil
        }
    }

    /// Starts or stops serving records; either way every record is dropped (changes made while nobody
    /// listened were not heard).
    func setListening(_ listening: Bool) {
        state.withLock { state in
            state.listening = listening
            state.generation &+= 1
            state.entries.removeAll(keepingCapacity: true)
        }
    }
}

/// Listens for the notifications PostgreSQL sends when a client changes (payload: tenant, space, client
/// id) and drops those clients from the cache. While it is not listening, the cache is not used at all.
struct ClientChangeListener: Service {
    static let channel = "latchkey_clients"

    let cache: ClientCache
    let client: PostgresClient
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            cache.setListening(true)
                            for try await notification in notifications {
                                let parts = notification.payload.split(separator: " ", maxSplits: 1)
                                guard parts.count == 2 else { continue }
                                cache.invalidate(tenant: String(parts[0]), clientID: String(parts[1]))
                            }
                        }
                    }
                } catch is CancellationError {
                    return
                } catch {
                    guard !Task.isCancelled else { return }
                    logger.warning(
                        "client change notifications interrupted; cached clients dropped",
                        metadata: ["error": "\(error.logDescription)"])
                }
                cache.setListening(false)
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}
