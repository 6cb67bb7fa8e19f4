import LatchkeyKafka
import Logging
import Synchronization
import Testing

/// Helpers shared by the Kafka tests: quiet loggers, unique names, running producers, collecting records.
package enum KafkaTestSupport {
    /// librdkafka is chatty while brokers are down on purpose; set LATCHKEY_KAFKA_TEST_LOG=debug to see it all.
    package static func logger(_ label: String) -> Logger {
        var logger = Logger(label: "test.kafka.\(label)")
        let requested = KafkaTestEnvironment.value("LATCHKEY_KAFKA_TEST_LOG").flatMap(Logger.Level.init(rawValue:))
        logger.logLevel = requested ?? .error
        return logger
    }

    /// Runs `body` against a fresh embedded cluster and always shuts the cluster down afterwards.
    package static func withCluster<T: Sendable>(
        brokers: Int,
        logger: Logger,
        _ body: (EmbeddedKafkaCluster) async throws -> T
    ) async throws -> T {
        try await withEmbeddedKafkaCluster(brokers: brokers, logger: logger, body)
    }

    /// A topic or group name no other (parallel) test uses.
    package static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Consumer settings for tests. The 2.0.2 mock coordinator waits `session.timeout.ms` − 1 s
    /// before re-forming a group a member has left, so a short session keeps group tests fast;
    /// it must stay above the mock's fixed 3 s initial join delay, or members expire while joining.
    package static func consumerConfiguration(_ cluster: EmbeddedKafkaCluster, clientID: String) -> KafkaConfiguration {
        configuration(
            cluster,
            clientID: clientID,
            properties: ["session.timeout.ms": "4500", "heartbeat.interval.ms": "500"]
        )
    }

    /// Client settings for tests: fast reconnects so broker outages end quickly, and no statistics.
    package static func configuration(
        _ cluster: EmbeddedKafkaCluster,
        clientID: String,
        properties: [String: String] = [:]
    ) -> KafkaConfiguration {
        configuration(brokers: cluster.bootstrapServers, clientID: clientID, properties: properties)
    }

    /// The same for brokers given by address (a cluster in another process).
    package static func configuration(
        brokers: String,
        clientID: String,
        properties: [String: String] = [:]
    ) -> KafkaConfiguration {
        var configuration = KafkaConfiguration(
            bootstrapServers: brokers,
            clientID: clientID,
            properties: [
                "reconnect.backoff.ms": "50",
                "reconnect.backoff.max.ms": "500",
            ].merging(properties) { _, override in override },
            statisticsInterval: nil
        )
        configuration.shutdownFlushTimeout = .seconds(2)
        return configuration
    }

    /// Runs `producer` as a service around `body`, then shuts it down via cancellation.
    package static func withRunningProducer<T: Sendable>(
        _ producer: KafkaProducer,
        _ body: (KafkaProducer) async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await producer.run() }
            do {
                let result = try await body(producer)
                group.cancelAll()
                try await group.waitForAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// Sends all values to `topic` (concurrently) and returns the delivery reports in input order.
    package static func send(
        _ values: [String],
        to topic: String,
        key: (Int) -> String? = { _ in nil },
        partition: (Int) -> Int32? = { _ in nil },
        with producer: KafkaProducer
    ) async throws -> [KafkaDeliveryReport] {
        let messages = values.enumerated().map { index, value in
            KafkaOutgoingMessage(topic: topic, key: key(index), value: value, partition: partition(index))
        }
        return try await withThrowingTaskGroup(of: (Int, KafkaDeliveryReport).self) { group in
            for (index, message) in messages.enumerated() {
                group.addTask { (index, try await producer.send(message)) }
            }
            var reports = [KafkaDeliveryReport?](repeating: nil, count: messages.count)
            for try await (index, report) in group {
                reports[index] = report
            }
            return reports.map { $0! }
        }
    }
}

/// A mutex-protected value that escaping test closures can share.
package final class KafkaTestLocked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: Value) {
        mutex = Mutex(value)
    }

    package func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T {
        mutex.withLock { body(&$0) }
    }
}

package struct KafkaTestTimeout: Error, CustomStringConvertible {
    package var description: String
}

extension KafkaConsumer {
    /// Reads exactly `count` records, or fails after `timeout`.
    package func collect(_ count: Int, within timeout: Duration = .seconds(20)) async throws -> [KafkaConsumerMessage] {
        let collected = KafkaTestLocked<[KafkaConsumerMessage]>([])
        let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for try await message in self.messages {
                    let done = collected.withLock { records in
                        records.append(message)
                        return records.count >= count
                    }
                    if done { return true }
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        let records = collected.withLock { $0 }
        guard finished else {
            throw KafkaTestTimeout(description: "read \(records.count) of \(count) records within \(timeout)")
        }
        return records
    }
}

extension KafkaConsumerMessage {
    package var stringValue: String { String(decoding: value, as: UTF8.self) }
}

/// Environment lookups without Foundation.
enum KafkaTestEnvironment {
    static func value(_ name: String) -> String? {
        guard let pointer = getenv(name) else { return nil }
        return String(cString: pointer)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
