import ArgumentParser

/// `latchkey`: operator and developer commands (migrations, the embedded Kafka cluster).
@main
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Latchkey operator and development commands.",
        subcommands: [MigrateCommand.self, KafkaClusterCommand.self])
}
