import ArgumentParser

/// `latchkey`: operator and developer commands (migrations, signing keys, the embedded Kafka cluster, the demo).
@main
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Latchkey operator and development commands.",
        subcommands: [
            MigrateCommand.self, TenantsCommand.self, ClientsCommand.self, ExportCommand.self, ImportCommand.self,
            KafkaClusterCommand.self, DemoCommand.self, KeysCommand.self,
        ])
}
