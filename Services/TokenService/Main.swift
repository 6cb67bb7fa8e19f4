import Configuration
import LatchkeyServer

/// `token-service`: the authorization server (discovery, JWKS, token, revoke, introspect, userinfo).
@main
struct Main {
    static func main() async {
        await ServiceMain.run(.tokenService) { settings, logger in
            let reader = ConfigReader(providers: [EnvironmentVariablesProvider()])
            return try buildApplication(
                settings: settings, tokenSettings: TokenServiceSettings(reader: reader), logger: logger)
        }
    }
}
