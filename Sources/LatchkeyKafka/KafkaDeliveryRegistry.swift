import Synchronization

/// Continuations of sends waiting for their delivery report, keyed by the per-message id that
/// travels through librdkafka as the message opaque.
final class KafkaDeliveryRegistry: Sendable {
    private struct State {
        var nextID: UInt = 1  // 0 would become a NULL opaque
        var waiting: [UInt: CheckedContinuation<KafkaDeliveryReport, any Error>] = [:]
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Registers a waiting send and, still under the lock, hands its id to `enqueue`.
    ///
    /// Holding the lock across `enqueue` (a non-blocking librdkafka call) lets ``close()`` guarantee
    /// that no enqueue is running or can start afterwards, so the handle can then be destroyed.
    /// Returns nil on success, or the error the continuation must be resumed with.
    func register(
        _ continuation: CheckedContinuation<KafkaDeliveryReport, any Error>,
        enqueue: (UInt) -> KafkaError?
    ) -> KafkaError? {
        state.withLock { state in
            guard !state.isClosed else { return KafkaError.producerShutDown }
            let id = state.nextID
            state.nextID &+= 1
            if state.nextID == 0 { state.nextID = 1 }
            // Registered first: the delivery report can only be served after enqueue returns.
            state.waiting[id] = continuation
            guard let error = enqueue(id) else { return nil }
            state.waiting[id] = nil
            return error
        }
    }

    func complete(_ id: UInt, with result: Result<KafkaDeliveryReport, KafkaError>) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: id) }
        // Resume outside the lock: resuming may run arbitrary code.
        continuation?.resume(with: result.mapError { $0 as any Error })
    }

    /// Refuses further registrations (waiting for one in progress); sends already waiting keep waiting.
    func close() {
        state.withLock { $0.isClosed = true }
    }

    var waitingCount: Int {
        state.withLock { $0.waiting.count }
    }

    /// Fails every send still waiting (its record's fate is unknown to the caller).
    func failAll(with error: KafkaError) {
        let continuations = state.withLock { state in
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        continuations.forEach { $0.resume(throwing: error) }
    }
}
