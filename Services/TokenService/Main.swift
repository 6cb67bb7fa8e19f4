import Shared

/// `token-service`: the authorization server (discovery, JWKS, authorize, token, revoke, introspect).
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.tokenService) { settings, logger in
            try buildApplication(settings: settings, logger: logger)
        }
    }
}
