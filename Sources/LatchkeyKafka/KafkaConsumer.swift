import Logging
import Metrics
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Kafka consumer with manual commits whose records are read through ``messages``.
///
/// Commit a record with ``commit(_:)`` only after its effect is durable: after a restart the
/// group resumes at the committed offsets, so uncommitted records are read again (at least once).
/// As a `Service`, ``run()`` waits for graceful shutdown and then closes the consumer, which ends
/// ``messages``; without a `ServiceGroup`, call ``close()`` yourself.
public final class KafkaConsumer: Service, Sendable {
    private let client: RdKafkaClient
    /// Runs polls (and the final close), so polling never blocks Swift's cooperative pool.
    let pollQueue: KafkaBlockingQueue
    /// Runs commits and offset queries, so they do not wait behind a poll.
    private let controlQueue: KafkaBlockingQueue
    private let closing = KafkaInterruptFlag()
    private let pendingAssignment: Mutex<(topics: [String], start: KafkaStartOffset)?>
    private let logger: Logger

    /// Creates the consumer and joins the group (or prepares the manual assignment).
    ///
    /// - Parameters:
    ///   - groupID: Consumer group used for membership and commits (use a dedicated group for a
    ///     reader that must see a whole topic).
    ///   - subscription: Group-managed topics, or every partition of some topics assigned manually.
    public init(
        configuration: KafkaConfiguration,
        groupID: String,
        subscription: KafkaConsumerSubscription,
        logger: Logger
    ) throws {
        var callbacks = RdKafkaClient.Callbacks(logger: logger)
        if configuration.statisticsInterval != nil {
            let recorder = KafkaStatisticsRecorder(
                clientID: configuration.clientID,
                role: "consumer",
                factory: configuration.metricsFactory ?? MetricsSystem.factory
            )
            callbacks.statistics = { recorder.record(json: $0) }
        }
        let client = try RdKafkaClient(
            role: .consumer,
            properties: configuration.consumerProperties(groupID: groupID),
            callbacks: callbacks
        )
        switch subscription {
        case .topics(let topics):
            try client.subscribe(topics: topics)
            pendingAssignment = Mutex(nil)
        case .allPartitions(let topics, let start):
            // Needs a (blocking) metadata lookup, so it happens on the poll queue before the first poll.
            pendingAssignment = Mutex((topics, start))
        }
        self.client = client
        self.pollQueue = KafkaBlockingQueue(label: "latchkey.kafka.consumer.poll.\(configuration.clientID)")
        self.controlQueue = KafkaBlockingQueue(label: "latchkey.kafka.consumer.control.\(configuration.clientID)")
        self.logger = logger
    }

    /// The records of the subscribed partitions, in offset order per partition.
    ///
    /// Iterate from one task. The sequence ends when the consumer is closed or the iterating task
    /// is cancelled, and throws only for fatal consumer errors; other errors are logged.
    public var messages: KafkaConsumerMessages {
        KafkaConsumerMessages(consumer: self)
    }

    /// Commits `message`: the group will resume after it (offset + 1 on its partition).
    public func commit(_ message: KafkaConsumerMessage) async throws {
        try await commit(offsets: [message.topicPartition: message.offset + 1])
    }

    /// Commits several partitions at once; each value is the next offset to read (last processed + 1).
    public func commit(offsets: [KafkaTopicPartition: Int64]) async throws {
        guard !offsets.isEmpty else { return }
        guard !closing.isRaised else { throw KafkaError.consumerClosed }
        let client = self.client
        try await controlQueue.run { () throws(KafkaError) in try client.commit(offsets) }
    }

    /// The group's committed offsets (next offset to read); partitions without one are omitted.
    public func committedOffsets(
        for partitions: [KafkaTopicPartition],
        timeout: Duration = .seconds(10)
    ) async throws -> [KafkaTopicPartition: Int64] {
        let client = self.client
        return try await controlQueue.run { () throws(KafkaError) in
            try client.committed(partitions, timeout: timeout)
        }
    }

    /// Offsets of the next record this consumer will return; partitions not yet fetched are omitted.
    public func positions(for partitions: [KafkaTopicPartition]) throws -> [KafkaTopicPartition: Int64] {
        try client.positions(partitions)
    }

    /// The partitions currently assigned to this consumer (empty until the group has balanced).
    public func assignment() throws -> [KafkaTopicPartition] {
        try client.assignment()
    }

    /// Low and high watermark of a partition (the high one is the offset the next record will get).
    public func watermarks(
        for partition: KafkaTopicPartition,
        timeout: Duration = .seconds(10)
    ) async throws -> (low: Int64, high: Int64) {
        let client = self.client
        return try await controlQueue.run { () throws(KafkaError) in
            try client.watermarks(partition, timeout: timeout)
        }
    }

    /// Records not yet committed by the group on `partition` (high watermark − committed offset).
    public func lag(for partition: KafkaTopicPartition, timeout: Duration = .seconds(10)) async throws -> Int64 {
        let (low, high) = try await watermarks(for: partition, timeout: timeout)
        let committed = try await committedOffsets(for: [partition], timeout: timeout)[partition] ?? low
        return max(0, high - committed)
    }

    /// Leaves the group and stops fetching; ``messages`` ends. Idempotent.
    ///
    /// A record being processed while this runs cannot be committed any more and will be read
    /// again by the group's next member; effects must therefore be idempotent.
    public func close() async {
        let firstClose = !closing.isRaised
        closing.raise()
        let client = self.client
        let logger = self.logger
        // Queued behind any poll in flight (at most one poll timeout); later callers simply wait
        // for the first close to finish.
        await pollQueue.run {
            guard firstClose else { return }
            do {
                try client.closeConsumer()
                logger.debug("Kafka consumer closed", metadata: ["kafka.client": "\(client.name)"])
            } catch {
                logger.warning("Kafka consumer close failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Waits for graceful shutdown (or cancellation), then closes the consumer.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch is CancellationError {
            // Cancellation is also a reason to leave the group cleanly.
        }
        await close()
    }

    /// What one iterator step produced.
    enum PollOutcome: Sendable {
        case message(KafkaConsumerMessage)
        /// Ends the sequence with this error.
        case failure(KafkaError)
        /// Reported by librdkafka but recoverable; logged, and reading continues.
        case warning(KafkaError)
    }

    /// One blocking poll step for the iterator, run on `pollQueue`; nil when closed or interrupted.
    func pollStep(interrupt: KafkaInterruptFlag) -> PollOutcome? {
        guard !closing.isRaised, !interrupt.isRaised else { return nil }
        do {
            try applyPendingAssignment(interrupt: interrupt)
        } catch {
            return closing.isRaised || interrupt.isRaised ? nil : .failure(error)
        }
        while !closing.isRaised && !interrupt.isRaised {
            switch client.consumerPoll(timeout: .milliseconds(100)) {
            case .idle:
                continue
            case .message(let message):
                return .message(message)
            case .error(let error):
                return error.isFatal ? .failure(error) : .warning(error)
            }
        }
        return nil
    }

    func logWarning(_ error: KafkaError) {
        logger.warning("Kafka consumer error", metadata: ["error": "\(error)"])
    }

    /// Resolves every partition of the manually assigned topics and assigns them.
    private func applyPendingAssignment(interrupt: KafkaInterruptFlag) throws(KafkaError) {
        guard let (topics, start) = pendingAssignment.withLock({ $0 }) else { return }
        var assignment: [KafkaTopicPartition: KafkaStartOffset] = [:]
        for topic in topics {
            let partitions = try partitionsWaitingForTopic(topic, interrupt: interrupt)
            for partition in partitions {
                assignment[KafkaTopicPartition(topic: topic, partition: partition)] = start
            }
        }
        try client.assign(assignment)
        pendingAssignment.withLock { $0 = nil }
        logger.debug("Kafka consumer assigned partitions", metadata: ["partitions": "\(assignment.count)"])
    }

    private func partitionsWaitingForTopic(
        _ topic: String,
        interrupt: KafkaInterruptFlag
    ) throws(KafkaError) -> [Int32] {
        // A freshly created topic can take a moment to show up in metadata.
        for _ in 0..<50 {
            if closing.isRaised || interrupt.isRaised { throw KafkaError.consumerClosed }
            let metadata = try client.metadata(timeout: .seconds(5))
            if let found = metadata.topic(named: topic), found.error == nil, !found.partitions.isEmpty {
                return found.partitions.map(\.id)
            }
            // A plain sleep: this is the consumer's own poll thread, and polling before the
            // assignment could only serve callbacks.
            usleep(200_000)
        }
        throw KafkaError(code: .unknownTopic, message: "topic \(topic) not found in cluster metadata")
    }
}
