import Foundation

extension UpstreamIdentityProvider {
    /// What is wrong with how Latchkey would authenticate at this provider: exactly one kind of credential,
    /// matching `token_endpoint_auth_method`, with keys that parse. Members are relative to the provider.
    public func credentialProblems() -> [(member: String, message: String)] {
        var problems: [(member: String, message: String)] = []
        func problem(_ member: String, _ message: String) { problems.append((member, message)) }
        let secretGiven = clientSecret != nil || clientSecretRef != nil
        if let jwt = clientSecretJWT {
            if tokenEndpointAuthMethod == .privateKeyJWT {
                problem("client_secret_jwt", "is a client secret; it does not go with private_key_jwt")
            }
            if secretGiven {
                problem("client_secret_jwt", "give client_secret_jwt or client_secret/client_secret_ref, not both")
            }
            if !Self.isKeyIdentifier(jwt.keyID) {
                problem("client_secret_jwt.key_id", "must be 1 to 64 characters of A-Z a-z 0-9 . _ -")
            }
            if !Self.isKeyIdentifier(jwt.teamID) {
                problem("client_secret_jwt.team_id", "must be 1 to 64 characters of A-Z a-z 0-9 . _ -")
            }
            if let audience = jwt.audience, audience.isEmpty || audience.utf8.count > 512 {
                problem("client_secret_jwt.audience", "must be 1 to 512 characters")
            }
            if let pem = jwt.privateKey {
                switch Result(catching: { () throws(JOSEError) in try SigningKey(pem: pem) }) {
                case .success(let key) where key.algorithm == .es256: break
                case .success: problem("client_secret_jwt.private_key", "must be a P-256 (ES256) key")
                case .failure: problem("client_secret_jwt.private_key", "must be a PKCS#8 PEM P-256 private key")
                }
            }
        }
        if tokenEndpointAuthMethod == .privateKeyJWT {
            if secretGiven {
                problem("client_secret", "private_key_jwt uses private_key_jwt.private_key, not a secret")
            }
            if let settings = privateKeyJWT {
                if let kid = settings.keyID, !Self.isKeyIdentifier(kid) {
                    problem("private_key_jwt.key_id", "must be 1 to 64 characters of A-Z a-z 0-9 . _ -")
                }
                if let pem = settings.privateKey, (try? SigningKey(pem: pem)) == nil {
                    problem("private_key_jwt.private_key", "must be a PEM P-256 or RSA (2048 to 4096 bits) private key")
                }
            } else {
                problem("private_key_jwt", "is required with token_endpoint_auth_method private_key_jwt")
            }
        } else if privateKeyJWT != nil {
            problem("private_key_jwt", "needs token_endpoint_auth_method private_key_jwt")
        }
        return problems
    }

    static func isKeyIdentifier(_ value: String) -> Bool {
        (1...64).contains(value.utf8.count)
            && value.utf8.allSatisfy { byte in
                byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            }
    }
}
