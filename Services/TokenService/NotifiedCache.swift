import Synchronization

/// Records read from PostgreSQL, kept until PostgreSQL notifies a change to them
/// (``ChangeNotificationListener``). `ttl` bounds how long a record can outlive a notification that never
/// came; while changes are not being heard, nothing is served or kept.
final class NotifiedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        let value: Value
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Advanced by every invalidation: a record read before one is not stored after it.
        var generation: UInt64 = 0
        var listening = false
    }

    let ttl: Duration
    let maximumEntries: Int
    private let state = Mutex(State())

    init(ttl: Duration, maximumEntries: Int) {
        self.ttl = ttl
        self.maximumEntries = maximumEntries
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// The current generation, to pass to ``store(_:for:readAt:)`` for a record read after this call.
    var generation: UInt64 { state.withLock { $0.generation } }

    func value(for key: Key) -> Value? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard state.listening, let entry = state.entries[key], entry.expires > now else { return nil }
            return entry.value
        }
    }

    /// Keeps `value`, read from the database after ``generation`` was `readAt`, unless a change was notified
    /// since (the record may predate it).
    func store(_ value: Value, for key: Key, readAt generation: UInt64) {
        let expires = ContinuousClock.now + ttl
        state.withLock { state in
            guard state.listening, state.generation == generation else { return }
            if state.entries.count >= maximumEntries { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = Entry(value: value, expires: expires)
        }
    }

    func invalidate(_ key: Key) {
        state.withLock { state in
            state.generation &+= 1
            state.entries[key] = nil
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
