import LatchkeyKafka
import Logging

/// Runs `body` against a fresh embedded Kafka cluster and always shuts the cluster down afterwards.
public func withEmbeddedKafkaCluster<T: Sendable>(
    brokers: Int, logger: Logger, _ body: (EmbeddedKafkaCluster) async throws -> T
) async throws -> T {
    let cluster = try EmbeddedKafkaCluster(brokers: brokers, logger: logger)
    do {
        let result = try await body(cluster)
        await cluster.shutdownAndWait()
        return result
    } catch {
        await cluster.shutdownAndWait()
        throw error
    }
}
