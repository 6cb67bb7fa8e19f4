import Shared

/// `token-service`: the authorization server (discovery, JWKS, authorize, token, revoke, introspect).
@main
struct Main {
    static func main() async {
        await ServiceMain.run(name: "token-service") { reader, logger in
            try await buildApplication(reader: reader, logger: logger)
        }
    }
}
