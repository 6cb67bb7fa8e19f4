import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyServer
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import Tracing

/// Reads `ClientRevoked`, `TokenRevoked` and `UserDisabled`/`UserEnabled` from the beginning of their topics
/// at start-up, then live, into ``RevokedClients``: revoked clients, revoked access tokens until they
/// expire, and disabled users.
///
/// Every replica reads every partition itself (manual assignment under its own group id, nothing
/// committed): the set is rebuilt from the topics at each start, so a restarted sidecar still refuses
/// every client and token whose revocation still matters. Revocations that no longer matter are skipped,
/// and the topics keep them longer than any token the sidecar accepts can live. The set is marked loaded
/// once each partition has been read up to the high watermark it had at start-up. A malformed record is
/// counted and skipped; a consumer failure is logged and the consumer recreated after a short pause.
struct RevocationListener: Service {
    let kafka: KafkaConfiguration
    let admin: KafkaAdmin
    /// The `ClientRevoked` topic.
    let topic: String
    /// The `TokenRevoked` topic.
    let tokenTopic: String
    /// The `UserDisabled`/`UserEnabled` topic.
    let userTopic: String
    let revocations: RevokedClients
    let metrics: SidecarMetrics
    let logger: Logger
    /// How often the consumer lag gauge is refreshed.
    var lagInterval: Duration = .seconds(5)

    /// Longest wait for the consumer to stop after graceful shutdown began.
    var shutdownGrace: Duration = .seconds(5)

    func run() async throws {
        let work = Task { await consumeUntilCancelled() }
        do { try await gracefulShutdown() } catch {}  // shutdown began, or this service was cancelled
        work.cancel()
        // librdkafka calls have no cancellation point (a watermark query waits out its timeout when the
        // brokers are gone, and with Kafka down the sidecar did not stop on SIGTERM at all), so the
        // consumer gets a bounded time to stop; the process then exits without it.
        let (stopped, signal) = AsyncStream<Void>.makeStream()
        Task {
            await work.value
            signal.finish()
        }
        let grace = shutdownGrace
        Task {
            try? await Task.sleep(for: grace)
            signal.finish()
        }
        for await _ in stopped {}
    }

    private func consumeUntilCancelled() async {
        while !Task.isCancelled {
            do {
                try await consumeFromBeginning()
            } catch is CancellationError {
                return
            } catch {
                logger.error(
                    "revocation consumer failed; restarting", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
            do { try await Task.sleep(for: .seconds(1)) } catch { return }
        }
    }

    private var topics: [String] { [topic, tokenTopic, userTopic] }

    private func consumeFromBeginning() async throws {
        let partitions = try await waitForPartitions()
        let consumer = try KafkaConsumer(
            configuration: kafka, groupID: "dpop-verifier-\(UUID().uuidString.lowercased())",
            subscription: .allPartitions(of: topics, startingAt: .beginning), logger: logger)
        do {
            try await consume(consumer, partitions: partitions)
            await consumer.close()
        } catch {
            await consumer.close()
            throw error
        }
    }

    private func consume(_ consumer: KafkaConsumer, partitions: [KafkaTopicPartition]) async throws {
        let progress = Progress()
        for partition in partitions {
            let (low, high) = try await consumer.watermarks(for: partition)
            progress.start(partition, next: low, target: high)
        }
        checkLoaded(progress)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await reportLag(consumer, progress: progress) }
            for try await message in consumer.messages {
                applyTraced(message, live: progress.caughtUp)
                progress.read(message.topicPartition, offset: message.offset)
                checkLoaded(progress)
            }
            group.cancelAll()
        }
    }

    /// Applies a record; a live one (read after the start-up replay) in a consumer span continuing the trace of
    /// the operation that caused it, when it carries one. Replayed records get none: every start of every
    /// replica would otherwise add spans to old traces.
    private func applyTraced(_ message: KafkaConsumerMessage, live: Bool) {
        guard live, let traceparent = Self.traceparent(of: message) else { return apply(message) }
        withSpan(
            "\(message.topic) process", context: KafkaTraceContext.context(continuing: traceparent),
            ofKind: .consumer
        ) { span in
            span.attributes["messaging.system"] = "kafka"
            span.attributes["messaging.operation.type"] = "process"
            span.attributes["messaging.operation.name"] = "process"
            span.attributes["messaging.destination.name"] = message.topic
            span.attributes["messaging.destination.partition.id"] = "\(message.partition)"
            span.attributes["messaging.kafka.offset"] = Int(message.offset)
            apply(message)
        }
    }

    /// The record's `traceparent` header (the producer's span), else the event's distributed-tracing attribute.
    private static func traceparent(of message: KafkaConsumerMessage) -> String? {
        if let header = Traceparent.validated(KafkaTraceContext.traceparentHeader(of: message)) { return header }
        struct TraceAttribute: Decodable { var traceparent: String? }
        return Traceparent.validated(
            try? JSONDecoder().decode(TraceAttribute.self, from: Data(message.value)).traceparent)
    }

    private func apply(_ message: KafkaConsumerMessage) {
        if message.topicPartition.topic == tokenTopic {
            applyTokenRevocation(message)
            return
        }
        if message.topicPartition.topic == userTopic {
            applyUserStatus(message)
            return
        }
        do {
            let event = try CloudEvent<ClientRevoked>.decode(from: Data(message.value))
            if revocations.insert(
                tenant: event.data.tenant, clientID: event.data.clientID, revokedAt: event.data.revokedAt,
                tokensExpireAt: event.data.accessTokensExpireAt)
            {
                logger.info(
                    "client revoked",
                    metadata: [
                        "tenant": "\(event.data.tenant)", "client_id": "\(event.data.clientID)",
                        "reason": "\(event.data.reason.rawValue)",
                    ])
            }
            metrics.revocationEventsApplied.increment()
            metrics.revokedClients.set(Int64(revocations.count))
        } catch {
            // Not ours to dead-letter: every replica reads the same record, the producer's side owns it.
            metrics.revocationEventsMalformed.increment()
            logger.error(
                "skipping malformed ClientRevoked record",
                metadata: [
                    "partition": "\(message.partition)", "offset": "\(message.offset)",
                ])
        }
    }

    private func applyTokenRevocation(_ message: KafkaConsumerMessage) {
        do {
            let event = try CloudEvent<TokenRevoked>.decode(from: Data(message.value))
            let jtis = Set((event.data.revokedJTIs ?? []) + (event.data.jti.map { [$0] } ?? []))
            let now = Date()
            for jti in jtis {
                revocations.insertToken(
                    tenant: event.data.tenant, jti: jti, revokedAt: event.data.revokedAt,
                    expiresAt: event.data.accessTokensExpireAt, now: now)
            }
            metrics.revocationEventsApplied.increment()
        } catch {
            metrics.revocationEventsMalformed.increment()
            logger.error(
                "skipping malformed TokenRevoked record",
                metadata: [
                    "partition": "\(message.partition)", "offset": "\(message.offset)",
                ])
        }
    }

    private func applyUserStatus(_ message: KafkaConsumerMessage) {
        do {
            let envelope = try AnyCloudEvent.decode(from: Data(message.value))
            switch envelope.eventType {
            case .userDisabled:
                let event = try envelope.decode(as: UserDisabled.self)
                revocations.setUser(tenant: event.data.tenant, userID: event.data.userID, disabled: true)
                logger.info(
                    "user disabled", metadata: ["tenant": "\(event.data.tenant)", "user_id": "\(event.data.userID)"])
            case .userEnabled:
                let event = try envelope.decode(as: UserEnabled.self)
                revocations.setUser(tenant: event.data.tenant, userID: event.data.userID, disabled: false)
                logger.info(
                    "user enabled", metadata: ["tenant": "\(event.data.tenant)", "user_id": "\(event.data.userID)"])
            default:
                throw UnexpectedEventType()
            }
            metrics.revocationEventsApplied.increment()
        } catch {
            metrics.revocationEventsMalformed.increment()
            logger.error(
                "skipping malformed user status record",
                metadata: [
                    "partition": "\(message.partition)", "offset": "\(message.offset)",
                ])
        }
    }

    private struct UnexpectedEventType: Error {}

    private func checkLoaded(_ progress: Progress) {
        guard !revocations.isLoaded, progress.caughtUp else { return }
        revocations.markLoaded()
        metrics.revokedClients.set(Int64(revocations.count))
        logger.info("revocation list loaded", metadata: ["revoked_clients": "\(revocations.count)"])
    }

    /// Refreshes the lag gauge, and while loading also the fetch positions: they step over offsets
    /// that deliver no record (compacted away, transaction markers), which message offsets cannot show.
    private func reportLag(_ consumer: KafkaConsumer, progress: Progress) async {
        let revocations = revocations
        let lagInterval = lagInterval
        await runPeriodically(
            every: revocations.isLoaded ? lagInterval : .milliseconds(500), name: "revocation lag report",
            logger: logger
        ) {
            if let positions = try? consumer.positions(for: progress.partitions) {
                for (partition, position) in positions { progress.read(partition, offset: position - 1) }
                checkLoaded(progress)
            }
            var lag: Int64 = 0
            var measured = true
            for partition in progress.partitions where !Task.isCancelled {
                if let (_, high) = try? await consumer.watermarks(for: partition, timeout: .seconds(2)) {
                    lag += max(0, high - progress.next(partition))
                } else {
                    measured = false
                }
            }
            metrics.revocationLag.set(lag)
            if measured, lag == 0, revocations.isLoaded {
                metrics.revocationCaughtUp.set(Date().timeIntervalSince1970)
            }
        }
    }

    /// The topics' partitions, waiting (not ready meanwhile) until the topics exist.
    private func waitForPartitions() async throws -> [KafkaTopicPartition] {
        var warned = false
        while true {
            try Task.checkCancellation()
            if let metadata = try? await admin.metadata(timeout: .seconds(1)) {
                let found = topics.compactMap { name in
                    metadata.topic(named: name).flatMap { $0.error == nil && !$0.partitions.isEmpty ? $0 : nil }
                        .map { $0.partitions.map { KafkaTopicPartition(topic: name, partition: $0.id) } }
                }
                if found.count == topics.count { return found.flatMap { $0 } }
            }
            if !warned {
                logger.warning(
                    "waiting for the revocation topics", metadata: ["topics": "\(topics.joined(separator: ", "))"])
                warned = true
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// Next offset to read and start-up target per partition.
    final class Progress: Sendable {
        private struct State {
            var next: [KafkaTopicPartition: Int64] = [:]
            var target: [KafkaTopicPartition: Int64] = [:]
        }
        private let state = Mutex(State())

        func start(_ partition: KafkaTopicPartition, next: Int64, target: Int64) {
            state.withLock {
                $0.next[partition] = next
                $0.target[partition] = target
            }
        }

        func read(_ partition: KafkaTopicPartition, offset: Int64) {
            state.withLock { $0.next[partition] = max($0.next[partition] ?? 0, offset + 1) }
        }

        func next(_ partition: KafkaTopicPartition) -> Int64 {
            state.withLock { $0.next[partition] ?? 0 }
        }

        var partitions: [KafkaTopicPartition] { state.withLock { Array($0.target.keys) } }

        var caughtUp: Bool {
            state.withLock { state in state.target.allSatisfy { state.next[$0.key, default: 0] >= $0.value } }
        }
    }
}
