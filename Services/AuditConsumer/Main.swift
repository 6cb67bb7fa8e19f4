import Shared

/// `audit-consumer`: the tamper-evident audit log built from the event stream.
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.auditConsumer) { settings, logger in
            try buildApplication(settings: settings, logger: logger)
        }
    }
}
