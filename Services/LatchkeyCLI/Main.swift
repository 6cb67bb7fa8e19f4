import ArgumentParser

/// `latchkey`: operator and developer commands (migrations, tenants and clients, signing keys, Kafka topics, the embedded Kafka cluster, the demo).
@main
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Latchkey operator and development commands.",
        subcommands: [
            MigrateCommand.self, TenantsCommand.self, ClientsCommand.self, ExportCommand.self, ImportCommand.self,
            KafkaClusterCommand.self, KafkaCommand.self, DemoCommand.self, KeysCommand.self,
        ])
}
