import Configuration
import LatchkeyServer

/// `audit-consumer`: the tamper-evident audit log built from the event stream.
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.auditConsumer) { settings, logger in
            let reader = ConfigReader(providers: [EnvironmentVariablesProvider()])
            return try buildApplication(settings: settings, audit: AuditSettings(reader: reader), logger: logger)
        }
    }
}
