import Synchronization

/// What happens with a record's delivery report, once it arrives.
typealias KafkaDeliveryHandler = @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void

/// Handlers of records waiting for their delivery report, keyed by the per-message id that travels
/// through librdkafka as the message opaque.
final class KafkaDeliveryRegistry: Sendable {
    private struct State {
        var nextID: UInt = 1  // 0 would become a NULL opaque
        var waiting: [UInt: KafkaDeliveryHandler] = [:]
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Registers a record's handler and, still under the lock, hands its id to `enqueue`.
    ///
    /// Holding the lock across `enqueue` (a non-blocking librdkafka call) lets ``close()`` guarantee
    /// that no enqueue is running or can start afterwards, so the handle can then be destroyed.
    /// Returns nil when the record was enqueued (its handler runs later, once), or the error that refused
    /// it (its handler never runs).
    func register(_ handler: @escaping KafkaDeliveryHandler, enqueue: (UInt) -> KafkaError?) -> KafkaError? {
        state.withLock { state in
            guard !state.isClosed else { return KafkaError.producerShutDown }
            let id = state.nextID
            state.nextID &+= 1
            if state.nextID == 0 { state.nextID = 1 }
            // Registered first: the delivery report can only be served after enqueue returns.
            state.waiting[id] = handler
            guard let error = enqueue(id) else { return nil }
            state.waiting[id] = nil
            return error
        }
    }

    func complete(_ id: UInt, with result: Result<KafkaDeliveryReport, KafkaError>) {
        let handler = state.withLock { $0.waiting.removeValue(forKey: id) }
        // Outside the lock: a handler may resume a task.
        handler?(result)
    }

    /// Refuses further registrations (waiting for one in progress); records already waiting keep waiting.
    func close() {
        state.withLock { $0.isClosed = true }
    }

    var waitingCount: Int {
        state.withLock { $0.waiting.count }
    }

    /// Fails every record still waiting (its fate is unknown to the caller).
    func failAll(with error: KafkaError) {
        let handlers = state.withLock { state in
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        handlers.forEach { $0(.failure(error)) }
    }
}
