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
        try await send(message, whenEnqueued: {})
    }

    /// Publishes records in order and waits for every delivery report; one result per record.
    ///
    /// Each record is handed to librdkafka only after the previous one, so records of one key keep
    /// their order on the partition, while all deliveries are awaited together (one round trip, not N).
    /// `whenEnqueued` runs once every record has been handed to librdkafka (or refused), before the
    /// deliveries are awaited.
    public func send(
        batch messages: [KafkaOutgoingMessage], whenEnqueued: @Sendable () -> Void = {}
    ) async -> [Result<KafkaDeliveryReport, any Error>] {
        // Each child stores its own outcome; the group's children return nothing. (Returning
        // `(index, result)` tuples through the group crashed in release builds under load.)
        let results = BatchResults(count: messages.count)
        await withTaskGroup(of: Void.self) { group in
            for (index, message) in messages.enumerated() {
                await withCheckedContinuation { (enqueued: CheckedContinuation<Void, Never>) in
                    group.addTask {
                        do {
                            results.set(
                                index, .success(try await self.send(message, whenEnqueued: { enqueued.resume() })))
                        } catch {
                            results.set(index, .failure(error))
                        }
                    }
                }
            }
            whenEnqueued()
            await group.waitForAll()
        }
        return results.all()
    }

    /// The outcomes of one batch, filled in by its sends.
    private final class BatchResults: Sendable {
        private let results: Mutex<[Result<KafkaDeliveryReport, any Error>?]>

        init(count: Int) { results = Mutex(Array(repeating: nil, count: count)) }

        func set(_ index: Int, _ result: Result<KafkaDeliveryReport, any Error>) {
            results.withLock { $0[index] = result }
        }

        func all() -> [Result<KafkaDeliveryReport, any Error>] {
            results.withLock { $0.map { $0 ?? .failure(KafkaError.producerShutDown) } }
        }
    }

    /// `whenEnqueued` runs exactly once: when librdkafka took the record, or when it was refused for good.
    private func send(
        _ message: KafkaOutgoingMessage, whenEnqueued: @escaping @Sendable () -> Void
    ) async throws -> KafkaDeliveryReport {
        while true {
            do {
                return try await enqueueAndAwaitDelivery(message, whenEnqueued: whenEnqueued)
            } catch let error as KafkaError where error.code == .queueFull {
                // The local queue is bounded (queue.buffering.max.messages); wait for room.
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    private func enqueueAndAwaitDelivery(
        _ message: KafkaOutgoingMessage, whenEnqueued: @Sendable () -> Void
    ) async throws -> KafkaDeliveryReport {
        try await withCheckedThrowingContinuation { continuation in
            let client = self.client
            let failure = deliveries.register(continuation) { id in
                client.produce(message, messageID: id)
            }
            if let failure {
                if failure.code != .queueFull { whenEnqueued() }
                continuation.resume(throwing: failure)
            } else {
                whenEnqueued()
            }
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
