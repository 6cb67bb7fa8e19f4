import CRdKafka
import Dispatch
import Logging
import Synchronization

extension RdKafkaClient {
    /// librdkafka's mock cluster (`rdkafka_mock.h`) and the dedicated handle that owns it.
    final class MockCluster: @unchecked Sendable {
        /// Keeps the owning handle alive for as long as the cluster exists.
        private let host: RdKafkaClient
        /// nil once shut down. Every mock call runs under this lock, so none can race the detach
        /// that precedes destruction (calling into a destroyed cluster is a use-after-free that
        /// deadlocks librdkafka).
        private let cluster: Mutex<ClusterPointer?>
        let bootstrapServers: String

        /// The raw cluster pointer; only ever used under the lock above.
        private struct ClusterPointer: @unchecked Sendable {
            let raw: OpaquePointer
        }

        init(brokers: Int, logger: Logger) throws(KafkaError) {
            // No bootstrap servers: this handle only hosts the cluster. Log level 4 hides the
            // notice librdkafka prints about that, but keeps the mock brokers' warnings.
            host = try RdKafkaClient(
                role: .producer,
                properties: ["log_level": "4"],
                callbacks: Callbacks(logger: logger)
            )
            guard let cluster = rd_kafka_mock_cluster_new(host.handle, Int32(brokers)) else {
                throw KafkaError(code: .failed, message: "rd_kafka_mock_cluster_new(\(brokers)) failed")
            }
            bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
            self.cluster = Mutex(ClusterPointer(raw: cluster))
        }

        deinit {
            destroyInBackground()
        }

        /// Stops the brokers and closes their sockets; blocks for up to about a second while
        /// librdkafka shuts the mock thread down. Idempotent.
        func destroy() {
            guard let live = detach() else { return }
            rd_kafka_mock_cluster_destroy(live.raw)
        }

        /// Like ``destroy()``, but returns at once; the sockets close shortly afterwards.
        func destroyInBackground() {
            guard let live = detach() else { return }
            let host = self.host
            RdKafkaClient.destroyQueue.async {
                rd_kafka_mock_cluster_destroy(live.raw)
                withExtendedLifetime(host) {}  // the owning handle must outlive the cluster
            }
        }

        /// Takes the cluster out of service: every later call fails with `clusterShutDown`.
        private func detach() -> ClusterPointer? {
            cluster.withLock { cluster in
                defer { cluster = nil }
                return cluster
            }
        }

        func createTopic(_ name: String, partitions: Int, replicationFactor: Int) throws(KafkaError) {
            try withCluster { rd_kafka_mock_topic_create($0, name, Int32(partitions), Int32(replicationFactor)) }
        }

        /// Every request of `apiKeys`, on open and new connections alike, makes its broker close
        /// that connection, until ``endOutage(apiKeys:)``. `requestsPerKey` bounds how many
        /// requests of each kind the outage absorbs before it ends by itself.
        func beginOutage(apiKeys: [Int16], requestsPerKey: Int) throws(KafkaError) {
            let disconnects = [rd_kafka_resp_err_t](repeating: RD_KAFKA_RESP_ERR__TRANSPORT, count: requestsPerKey)
            try withCluster { cluster in
                disconnects.withUnsafeBufferPointer { buffer in
                    for apiKey in apiKeys {
                        rd_kafka_mock_push_request_errors_array(cluster, apiKey, buffer.count, buffer.baseAddress)
                    }
                }
                return RD_KAFKA_RESP_ERR_NO_ERROR
            }
        }

        func endOutage(apiKeys: [Int16]) throws(KafkaError) {
            try withCluster { cluster in
                for apiKey in apiKeys { rd_kafka_mock_clear_request_errors(cluster, apiKey) }
                return RD_KAFKA_RESP_ERR_NO_ERROR
            }
        }

        func setLeader(topic: String, partition: Int32, brokerID: Int32) throws(KafkaError) {
            try withCluster { rd_kafka_mock_partition_set_leader($0, topic, partition, brokerID) }
        }

        /// Makes the next `errors.count` requests of `apiKey` (to any broker) fail, in order.
        func pushRequestErrors(apiKey: Int16, errors: [Int32]) throws(KafkaError) {
            let codes = errors.map { rd_kafka_resp_err_t(rawValue: $0) }
            try withCluster { cluster in
                codes.withUnsafeBufferPointer { buffer in
                    rd_kafka_mock_push_request_errors_array(cluster, apiKey, buffer.count, buffer.baseAddress)
                }
                return RD_KAFKA_RESP_ERR_NO_ERROR
            }
        }

        func clearRequestErrors(apiKey: Int16) throws(KafkaError) {
            try withCluster { cluster in
                rd_kafka_mock_clear_request_errors(cluster, apiKey)
                return RD_KAFKA_RESP_ERR_NO_ERROR
            }
        }

        private func withCluster(_ body: (OpaquePointer) -> rd_kafka_resp_err_t) throws(KafkaError) {
            let code: rd_kafka_resp_err_t? = cluster.withLock { cluster in
                guard let live = cluster else { return nil }
                return body(live.raw)
            }
            guard let code else { throw KafkaError.clusterShutDown }
            try RdKafkaClient.check(code)
        }
    }
}
