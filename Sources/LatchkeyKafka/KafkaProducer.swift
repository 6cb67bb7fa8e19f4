import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// An idempotent Kafka producer whose ``send(_:)`` returns once the cluster acknowledged the record.
///
/// Delivery reports are only served while ``run()`` executes, so add the producer to the
/// `ServiceGroup` (or otherwise run it) before sending. Graceful shutdown stops accepting
/// sends, flushes outstanding records for `shutdownFlushTimeout`, fails the rest, and destroys
/// the librdkafka handle; a producer is not restartable.
public final class KafkaProducer: Service, Sendable {
    private let client: RdKafkaClient
    private let deliveries: KafkaDeliveryRegistry
    private let pollQueue: KafkaBlockingQueue
    private let stopPolling = KafkaInterruptFlag()
    private let shutdownFlushTimeout: Duration
    private let logger: Logger

    public init(configuration: KafkaConfiguration, logger: Logger) throws {
        let deliveries = KafkaDeliveryRegistry()
        var callbacks = RdKafkaClient.Callbacks(
            logger: logger,
            delivery: { id, result in deliveries.complete(id, with: result) }
        )
        if configuration.statisticsInterval != nil {
            let recorder = KafkaStatisticsRecorder(
                clientID: configuration.clientID,
                role: "producer",
                factory: configuration.metricsFactory ?? MetricsSystem.factory
            )
            callbacks.statistics = { recorder.record(json: $0) }
        }
        self.client = try RdKafkaClient(
            role: .producer,
            properties: configuration.producerProperties(),
            callbacks: callbacks
        )
        self.deliveries = deliveries
        self.pollQueue = KafkaBlockingQueue(label: "latchkey.kafka.producer.\(configuration.clientID)")
        self.shutdownFlushTimeout = configuration.shutdownFlushTimeout
        self.logger = logger
    }

    /// Publishes one record and waits for its delivery report.
    ///
    /// Returns where the record was stored, or throws the delivery error (for example
    /// `_MSG_TIMED_OUT` after `messageTimeout`). Retriable broker errors are retried inside
    /// librdkafka without duplicating the record. Cancelling the calling task does not
    /// withdraw a record that was already handed over; the call still waits for its fate.
    public func send(_ message: KafkaOutgoingMessage) async throws -> KafkaDeliveryReport {
        try await send(batch: [message])[0].get()
    }

    /// Publishes records in order and waits for every delivery report; one result per record.
    ///
    /// Each record is handed to librdkafka only after the previous one, so records of one key keep
    /// their order on the partition, while all deliveries are awaited together (one round trip, not N).
    /// The calling task enqueues them itself and is resumed once, when the last report arrives: no task
    /// per record, so a batch costs the cooperative pool one wake-up however many records it holds.
    /// `whenEnqueued` runs once every record has been handed to librdkafka (or refused), before the
    /// deliveries are awaited.
    public func send(
        batch messages: [KafkaOutgoingMessage], whenEnqueued: @Sendable () -> Void = {}
    ) async -> [Result<KafkaDeliveryReport, any Error>] {
        let outcomes = BatchOutcomes(count: messages.count)
        for (index, message) in messages.enumerated() {
            await enqueue(message) { outcomes.set(index, $0) }
        }
        whenEnqueued()
        return await outcomes.all()
    }

    /// Hands one record to librdkafka, waiting for room while its local queue is full
    /// (`queue.buffering.max.messages`). `outcome` receives the delivery report, or the error that refused
    /// the record for good (or the cancellation that ended the wait for room); exactly once.
    private func enqueue(
        _ message: KafkaOutgoingMessage, outcome: @escaping @Sendable (Result<KafkaDeliveryReport, any Error>) -> Void
    ) async {
        let client = self.client
        while true {
            let refusal = deliveries.register({ outcome($0.mapError { $0 }) }) { id in
                client.produce(message, messageID: id)
            }
            guard let refusal else { return }
            guard refusal.code == .queueFull else { return outcome(.failure(refusal)) }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                return outcome(.failure(error))
            }
        }
    }

    /// The outcomes of one batch: the task that sent it waits for the last one.
    private final class BatchOutcomes: Sendable {
        typealias Outcome = Result<KafkaDeliveryReport, any Error>

        private struct State {
            var results: [Outcome?]
            var missing: Int
            var waiter: CheckedContinuation<[Outcome], Never>?
        }

        private let state: Mutex<State>

        init(count: Int) { state = Mutex(State(results: Array(repeating: nil, count: count), missing: count)) }

        func set(_ index: Int, _ result: Outcome) {
            let finished = state.withLock { state -> (CheckedContinuation<[Outcome], Never>, [Outcome])? in
                guard state.results[index] == nil else { return nil }
                state.results[index] = result
                state.missing -= 1
                guard state.missing == 0, let waiter = state.waiter else { return nil }
                state.waiter = nil
                return (waiter, Self.complete(state.results))
            }
            // Resumed outside the lock: the waiting task may run at once.
            finished.map { $0.0.resume(returning: $0.1) }
        }

        /// Every outcome, once the last one is in.
        func all() async -> [Outcome] {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> [Outcome]? in
                    guard state.missing == 0 else {
                        state.waiter = continuation
                        return nil
                    }
                    return Self.complete(state.results)
                }
                ready.map { continuation.resume(returning: $0) }
            }
        }

        private static func complete(_ results: [Outcome?]) -> [Outcome] {
            results.map { $0 ?? .failure(KafkaError.producerShutDown) }
        }
    }

    /// Serves delivery reports until graceful shutdown or cancellation, then drains and stops.
    public func run() async throws {
        let client = self.client
        let stopPolling = self.stopPolling
        await withTaskCancellationOrGracefulShutdownHandler {
            await pollQueue.run {
                // A bounded wait keeps the stop flag checked several times a second.
                while !stopPolling.isRaised {
                    client.poll(timeout: .milliseconds(100))
                }
            }
        } onCancelOrGracefulShutdown: {
            stopPolling.raise()
        }
        await shutDown()
    }

    private func shutDown() async {
        deliveries.close()
        let client = self.client
        let flushTimeout = shutdownFlushTimeout
        // flush serves delivery reports itself while it waits.
        let remaining = await pollQueue.run { client.flush(timeout: flushTimeout) }
        if remaining > 0 {
            logger.warning("Kafka producer shutting down with undelivered records", metadata: ["count": "\(remaining)"])
            await pollQueue.run {
                client.purgeOutstanding()
                // Serve the purge delivery reports so each waiting send learns its record failed.
                _ = client.flush(timeout: .milliseconds(500))
            }
        }
        deliveries.failAll(with: .producerShutDown)
        // No send can reach the handle any more (the registry is closed), so release it now
        // rather than whenever the last reference to the producer goes away.
        await pollQueue.run { client.destroy() }
        logger.debug("Kafka producer stopped", metadata: ["kafka.client": "\(client.name)"])
    }
}
