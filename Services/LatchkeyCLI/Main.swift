import ArgumentParser

/// `latchkey`: operator and developer commands (migrations, signing keys, the embedded Kafka cluster, the demo).
@main
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Latchkey operator and development commands.",
        subcommands: [
            MigrateCommand.self, KafkaClusterCommand.self, KafkaTopicsCommand.self, DemoCommand.self, KeysCommand.self,
        ])
}
