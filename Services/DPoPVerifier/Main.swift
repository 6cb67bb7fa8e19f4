import Shared

/// `dpop-verifier`: the sidecar that verifies access token and DPoP proof in front of an API.
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.dpopVerifier) { settings, logger in
            try buildApplication(settings: settings, logger: logger)
        }
    }
}
