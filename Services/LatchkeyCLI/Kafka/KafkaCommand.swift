import ArgumentParser
import Configuration
import LatchkeyCore
import LatchkeyKafka
import LatchkeyServer
import Logging

/// `latchkey kafka topics ensure`: the platform's topics on a Kafka cluster the operator runs.
struct KafkaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka", abstract: "Kafka administration for bring-your-own clusters.",
        subcommands: [Topics.self])

    struct Topics: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The platform's Kafka topics.", subcommands: [Ensure.self, List.self])
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every topic the platform needs, one a line: its name, then its settings as key=value.",
            discussion: """
                For an operator (or a CI job) creating the topics with the broker's own tooling. Topic names are \
                under KAFKA_TOPIC_PREFIX.
                """)

        func run() {
            let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
            let prefix = env.text("kafka.topic.prefix", default: LatchkeyEventType.defaultTopicPrefix)
            for topic in PlatformTopics.specifications(prefix: prefix, partitions: 1, replicationFactor: 1) {
                print(
                    ([topic.name] + topic.configs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
                        .joined(separator: " "))
            }
        }
    }

    struct Ensure: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the platform's topics that are missing, with the configs each needs.",
            discussion: """
                Talks to the cluster in KAFKA_BROKERS with the services' KAFKA_SECURITY_PROTOCOL and SASL/TLS settings \
                (topic names under KAFKA_TOPIC_PREFIX). Existing topics are \
                left as they are. Exits 1 when an existing topic's partition count differs from --partitions: \
                Kafka cannot shrink a topic, and growing it moves keys to other partitions, so that change is the \
                operator's decision.
                """)

        @Option(help: "Partitions of each created topic.") var partitions = 3
        @Option(help: "Replication factor of each created topic.") var replicationFactor = 3
        @Option(help: "Seconds to wait for the cluster.") var timeout = 30
        @Option(help: "table or json") var output: OutputFormat = .table

        func validate() throws {
            guard (1...10_000).contains(partitions) else { throw ValidationError("--partitions must be 1…10000") }
            guard (1...16).contains(replicationFactor) else {
                throw ValidationError("--replication-factor must be 1…16")
            }
            guard (1...600).contains(timeout) else { throw ValidationError("--timeout must be 1…600 seconds") }
        }

        func run() async throws {
            let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
            let brokers = try env.required("kafka.brokers", example: "host:port[,host:port…]")
            let prefix = env.text("kafka.topic.prefix", default: LatchkeyEventType.defaultTopicPrefix)
            var logger = Logger(label: "latchkey.kafka")
            logger.logLevel = .warning
            var configuration = KafkaConfiguration(bootstrapServers: brokers, clientID: "latchkey-cli")
            configuration.security = try KafkaSecurity(env)
            let admin = try KafkaAdmin(configuration: configuration, logger: logger)
            let wanted = PlatformTopics.specifications(
                prefix: prefix, partitions: partitions, replicationFactor: replicationFactor)
            let outcomes = try await admin.createTopics(wanted, timeout: .seconds(timeout))
            let report = wanted.map { TopicReport(specification: $0, outcome: outcomes[$0.name]) }
            switch output {
            case .json:
                print(PrettyJSON.string(.object(["topics": .array(report.map(\.json))])))
            case .table:
                print(
                    TextTable.render(
                        header: ["TOPIC", "STATE", "PARTITIONS", "CONFIGS"],
                        rows: report.map {
                            [$0.name, $0.state, $0.partitions.map(String.init) ?? "-", $0.configs]
                        }))
            }
            if report.contains(where: { $0.state == TopicReport.partitionsDiffer }) { throw ExitCode(1) }
        }
    }

    /// One topic's line of the report.
    struct TopicReport {
        static let partitionsDiffer = "partitions-differ"

        var name: String
        var state: String
        var partitions: Int?
        var requestedPartitions: Int
        var configs: String

        init(specification: KafkaTopicSpecification, outcome: KafkaTopicCreationOutcome?) {
            name = specification.name
            requestedPartitions = specification.partitions
            configs = specification.configs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: ",")
            switch outcome {
            case .created:
                state = "created"
                partitions = specification.partitions
            case .alreadyExists(let existing):
                state = existing == specification.partitions ? "exists" : Self.partitionsDiffer
                partitions = existing
            case .autoCreated(let existing):
                // Only clusters without a CreateTopics controller (librdkafka's mock cluster) get here.
                state = "auto-created"
                partitions = existing
            case nil:
                state = "unknown"
            }
        }

        var json: JSONValue {
            .object([
                "name": .string(name), "state": .string(state),
                "partitions": partitions.map { .number(Double($0)) } ?? .null,
                "requested_partitions": .number(Double(requestedPartitions)), "configs": .string(configs),
            ])
        }
    }
}
