import MetricsTestKit
import Testing

@testable import LatchkeyKafka

@Suite("Kafka statistics")
struct KafkaStatisticsTests {
    private static let sample = """
        {"name":"audit#consumer-1","client_id":"audit","type":"consumer","ts":1,"time":2,"replyq":3,
         "msg_cnt":4,"msg_size":0,"tx":10,"rx":11,"txmsgs":5,"rxmsgs":6,
         "brokers":{"127.0.0.1:9092/1":{"name":"127.0.0.1:9092/1","nodeid":1,"state":"UP"}},
         "topics":{"events":{"topic":"events","partitions":{
           "0":{"partition":0,"consumer_lag":7,"msgq_cnt":0},
           "1":{"partition":1,"consumer_lag":-1},
           "-1":{"partition":-1,"consumer_lag":-1}}}},
         "cgrp":{"state":"up"}}
        """

    @Test("the few exported fields are parsed and unknown lag is skipped")
    func parsesSample() throws {
        let statistics = try KafkaStatistics(json: Self.sample)
        #expect(statistics.queuedMessages == 4)
        #expect(statistics.replyQueueEvents == 3)
        #expect(statistics.transmittedMessages == 5)
        #expect(statistics.receivedMessages == 6)
        #expect(statistics.consumerLag == [KafkaTopicPartition(topic: "events", partition: 0): 7])
    }

    @Test("statistics become gauges; malformed documents are ignored")
    func recordsGauges() throws {
        let metrics = TestMetrics()
        let recorder = KafkaStatisticsRecorder(clientID: "audit", role: "consumer", factory: metrics)
        recorder.record(json: "{not json")
        #expect(metrics.recorders.isEmpty)
        recorder.record(json: Self.sample)
        let dimensions = [("client_id", "audit"), ("role", "consumer")]
        #expect(try metrics.expectGauge("latchkey_kafka_client_queued_messages", dimensions).lastValue == 4)
        #expect(try metrics.expectGauge("latchkey_kafka_client_received_messages", dimensions).lastValue == 6)
        let lag = try metrics.expectGauge(
            "latchkey_kafka_consumer_lag_messages",
            dimensions + [("topic", "events"), ("partition", "0")]
        )
        #expect(lag.lastValue == 7)
    }
}
