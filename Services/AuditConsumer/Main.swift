import Shared

/// `audit-consumer`: the tamper-evident audit log built from the event stream.
@main
struct Main {
    static func main() async {
        await ServiceMain.run(name: "audit-consumer") { reader, logger in
            try await buildApplication(reader: reader, logger: logger)
        }
    }
}
