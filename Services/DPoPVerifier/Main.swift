import Configuration
import LatchkeyServer

/// `dpop-verifier`: the sidecar that verifies access token and DPoP proof in front of an API.
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.dpopVerifier) { settings, logger in
            let reader = ConfigReader(providers: [EnvironmentVariablesProvider()])
            return try buildApplication(settings: settings, sidecar: SidecarSettings(reader: reader), logger: logger)
        }
    }
}
