import LatchkeyCore
import LatchkeyKafka
import LatchkeyTestSupport
import Testing

/// `latchkey kafka topics ensure` against the embedded Kafka cluster: it creates what is missing, leaves what
/// exists, reports a partition count that differs (exit 1), and a second run changes nothing.
@Suite struct KafkaTopicsEnsureTests {
    @Test func createsMissingTopicsLeavesExistingOnesAndReportsPartitionDrift() async throws {
        let logger = KafkaTestSupport.logger("topics-ensure")
        try await withEmbeddedKafkaCluster(brokers: 1, logger: logger) { cluster in
            let prefix = "ensure-\(Int.random(in: 100_000...999_999))."
            let revoked = LatchkeyEventType.clientRevoked.topic(prefix: prefix)
            let registered = LatchkeyEventType.clientRegistered.topic(prefix: prefix)
            try cluster.createTopic(revoked, partitions: 3)
            try cluster.createTopic(registered, partitions: 1)
            let environment = ["KAFKA_BROKERS": cluster.bootstrapServers, "KAFKA_TOPIC_PREFIX": prefix]
            let ensure = ["kafka", "topics", "ensure", "--partitions", "3", "--replication-factor", "1"]

            let first = try await LatchkeyRun.run(ensure + ["--output", "json"], environment: environment)
            #expect(first.status == 1, "the one-partition topic differs from --partitions 3: \(first)")
            let states = try Self.states(first)
            let expected =
                LatchkeyEventType.allTopics(prefix: prefix) + [LatchkeyEventType.deadLetterTopic(prefix: prefix)]
            #expect(Set(states.keys) == Set(expected))
            #expect(states[revoked] == "exists")
            #expect(states[registered] == "partitions-differ")
            for topic in expected where topic != revoked && topic != registered {
                // The mock cluster has no CreateTopics controller, so its brokers auto-create.
                #expect(states[topic] == "auto-created" || states[topic] == "created", "\(topic): \(first)")
            }
            let admin = try KafkaAdmin(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "topics-check"), logger: logger)
            let existing = Set(try await admin.listTopics().map(\.name))
            #expect(existing.isSuperset(of: expected))

            let second = try await LatchkeyRun.run(ensure + ["--output", "json"], environment: environment)
            let again = try Self.states(second)
            #expect(!again.values.contains("created") && !again.values.contains("auto-created"), "\(second)")
            #expect(again[registered] == "partitions-differ")

            let table = try await LatchkeyRun.run(ensure, environment: environment)
            #expect(table.output.contains("TOPIC") && table.output.contains(registered), "\(table)")
        }
    }

    @Test func withoutBrokersItExplainsWhatIsMissing() async throws {
        let run = try await LatchkeyRun.run(["kafka", "topics", "ensure"], environment: [:])
        #expect(run.status != 0 && run.output.contains("KAFKA_BROKERS"), "\(run)")
    }

    static func states(_ run: LatchkeyRun) throws -> [String: String] {
        var states: [String: String] = [:]
        for entry in try run.json()["topics"]?.arrayValue ?? [] {
            if let name = entry["name"]?.stringValue, let state = entry["state"]?.stringValue { states[name] = state }
        }
        return states
    }
}
