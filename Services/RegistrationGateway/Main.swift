import Configuration
import LatchkeyServer

/// `registration-gateway`: RFC 7591/7592 dynamic client registration and the admin API.
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.registrationGateway) { settings, logger in
            try buildApplication(
                reader: ConfigReader(providers: [EnvironmentVariablesProvider()]), settings: settings, logger: logger)
        }
    }
}
