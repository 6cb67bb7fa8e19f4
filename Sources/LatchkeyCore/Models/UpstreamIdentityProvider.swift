import Foundation

/// An upstream OpenID Connect provider users of a tenant can sign in with ("continue with …").
public struct UpstreamIdentityProvider: Codable, Sendable, Hashable {
    /// Path segment of `/t/{tenant}/auth/{id}` and the `provider` of external identities.
    public var id: String
    /// Shown on the button, e.g. "Google".
    public var displayName: String
    /// The provider's issuer; its discovery document is at `{issuer}/.well-known/openid-configuration`.
    public var issuer: String
    /// Latchkey's client id at the provider.
    public var clientID: String
    /// Where an operator keeps the client secret (`env:NAME` or `file:/path`), only among the references
    /// the operator allows (`UPSTREAM_SECRET_REFERENCES`); nil when the secret is stored sealed.
    public var clientSecretRef: String?
    /// The client secret as a tenant admin gives it in a policy update. Write-only: the gateway seals it
    /// into its own table and removes it from the policy, which is readable by admins and copied into
    /// audit records. Never encoded.
    public var clientSecret: String?
    public var scopes: [String]
    /// How Latchkey authenticates at the provider's token endpoint.
    public var tokenEndpointAuthMethod: UpstreamClientAuthMethod
    /// How the provider returns the authorization response: `query` (a GET) or `form_post` (a cross-site POST).
    public var responseMode: UpstreamResponseMode
    /// A client secret Latchkey generates for each exchange: an ES256 JWT signed with the provider-issued
    /// key (Sign in with Apple), instead of a fixed `client_secret`.
    public var clientSecretJWT: UpstreamClientSecretJWT?
    /// The key of `private_key_jwt` (RFC 7523 client assertions).
    public var privateKeyJWT: UpstreamPrivateKeyJWT?

    public init(
        id: String,
        displayName: String,
        issuer: String,
        clientID: String,
        clientSecretRef: String? = nil,
        clientSecret: String? = nil,
        scopes: [String] = ["openid", "profile", "email"],
        tokenEndpointAuthMethod: UpstreamClientAuthMethod = .clientSecretBasic,
        responseMode: UpstreamResponseMode = .query,
        clientSecretJWT: UpstreamClientSecretJWT? = nil,
        privateKeyJWT: UpstreamPrivateKeyJWT? = nil
    ) {
        self.id = id
        self.displayName = displayName
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecretRef = clientSecretRef
        self.clientSecret = clientSecret
        self.scopes = scopes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.responseMode = responseMode
        self.clientSecretJWT = clientSecretJWT
        self.privateKeyJWT = privateKeyJWT
    }

    /// `clientSecretRef` parsed; `nil` when absent or with neither prefix.
    public var clientSecretReference: SecretReference? { clientSecretRef.flatMap(SecretReference.init) }

    /// Associated data of this provider's sealed secret: a sealed value copied to another tenant or
    /// provider does not open.
    public static func sealedSecretContext(tenant: String, provider: String) -> Data {
        Data("latchkey upstream client secret\u{0}\(tenant)\u{0}\(provider)".utf8)
    }

    /// The kind of credential sealed for this provider, nil when it uses an operator's reference.
    public var sealedCredentialKind: UpstreamCredentialKind? {
        if tokenEndpointAuthMethod == .privateKeyJWT { return .privateKeyJWTKey }
        if clientSecretJWT != nil { return .clientSecretJWTKey }
        return clientSecretRef == nil ? .clientSecret : nil
    }

    /// Associated data of a sealed credential of `kind`: a value sealed as one kind never opens as another.
    public static func sealedCredentialContext(_ kind: UpstreamCredentialKind, tenant: String, provider: String)
        -> Data
    {
        switch kind {
        case .clientSecret: sealedSecretContext(tenant: tenant, provider: provider)
        case .clientSecretJWTKey, .privateKeyJWTKey:
            Data("latchkey upstream \(kind.rawValue)\u{0}\(tenant)\u{0}\(provider)".utf8)
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case displayName = "display_name"
        case issuer
        case clientID = "client_id"
        case clientSecretRef = "client_secret_ref"
        case clientSecret = "client_secret"
        case scopes
        case tokenEndpointAuthMethod = "token_endpoint_auth_method"
        case responseMode = "response_mode"
        case clientSecretJWT = "client_secret_jwt"
        case privateKeyJWT = "private_key_jwt"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(issuer, forKey: .issuer)
        try container.encode(clientID, forKey: .clientID)
        try container.encodeIfPresent(clientSecretRef, forKey: .clientSecretRef)
        try container.encode(scopes, forKey: .scopes)
        if tokenEndpointAuthMethod != .clientSecretBasic {
            try container.encode(tokenEndpointAuthMethod, forKey: .tokenEndpointAuthMethod)
        }
        if responseMode != .query { try container.encode(responseMode, forKey: .responseMode) }
        try container.encodeIfPresent(clientSecretJWT, forKey: .clientSecretJWT)
        try container.encodeIfPresent(privateKeyJWT, forKey: .privateKeyJWT)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName) ?? id
        issuer = try container.decode(String.self, forKey: .issuer)
        clientID = try container.decode(String.self, forKey: .clientID)
        clientSecretRef = try container.decodeIfPresent(String.self, forKey: .clientSecretRef)
        clientSecret = try container.decodeIfPresent(String.self, forKey: .clientSecret)
        scopes = try container.decodeIfPresent([String].self, forKey: .scopes) ?? ["openid", "profile", "email"]
        tokenEndpointAuthMethod =
            try container.decodeIfPresent(UpstreamClientAuthMethod.self, forKey: .tokenEndpointAuthMethod)
            ?? .clientSecretBasic
        responseMode = try container.decodeIfPresent(UpstreamResponseMode.self, forKey: .responseMode) ?? .query
        clientSecretJWT = try container.decodeIfPresent(UpstreamClientSecretJWT.self, forKey: .clientSecretJWT)
        privateKeyJWT = try container.decodeIfPresent(UpstreamPrivateKeyJWT.self, forKey: .privateKeyJWT)
    }
}

/// Client authentication at an upstream token endpoint (OpenID Connect Core §9).
public enum UpstreamClientAuthMethod: String, Codable, Sendable, Hashable, CaseIterable {
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
    case privateKeyJWT = "private_key_jwt"
}

/// How an upstream provider sends its authorization response (OAuth 2.0 Form Post Response Mode).
public enum UpstreamResponseMode: String, Codable, Sendable, Hashable, CaseIterable {
    case query
    case formPost = "form_post"
}

/// What is sealed in `upstream_client_secrets` for a provider.
public enum UpstreamCredentialKind: String, Sendable, Hashable, CaseIterable {
    case clientSecret = "client_secret"
    case clientSecretJWTKey = "client_secret_jwt_key"
    case privateKeyJWTKey = "private_key_jwt_key"
}

/// A client secret that is a short-lived ES256 JWT (Sign in with Apple): header `kid` = `key_id`, claims
/// `iss` = `team_id`, `sub` = the client id, `aud` = `audience` (default: the provider's issuer), `iat`, `exp`.
public struct UpstreamClientSecretJWT: Codable, Sendable, Hashable {
    public var keyID: String
    public var teamID: String
    public var audience: String?
    /// The P-256 private key (PKCS#8 PEM, as in Apple's `.p8` file). Write-only, sealed like `client_secret`.
    public var privateKey: String?

    public init(keyID: String, teamID: String, audience: String? = nil, privateKey: String? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.audience = audience
        self.privateKey = privateKey
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case keyID = "key_id"
        case teamID = "team_id"
        case audience
        case privateKey = "private_key"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(keyID, forKey: .keyID)
        try container.encode(teamID, forKey: .teamID)
        try container.encodeIfPresent(audience, forKey: .audience)
    }
}

/// The key Latchkey signs `private_key_jwt` client assertions with (RFC 7523).
public struct UpstreamPrivateKeyJWT: Codable, Sendable, Hashable {
    /// The assertion header's `kid`; the key's RFC 7638 thumbprint when the admin gives none.
    public var keyID: String?
    /// The private key (PKCS#8 PEM: P-256 for ES256 or RSA of 2048 to 4096 bits for RS256). Write-only, sealed.
    public var privateKey: String?
    /// The public half, set by the gateway, to register at the provider. Read-only.
    public var publicJWK: JWK?

    public init(keyID: String? = nil, privateKey: String? = nil, publicJWK: JWK? = nil) {
        self.keyID = keyID
        self.privateKey = privateKey
        self.publicJWK = publicJWK
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case keyID = "key_id"
        case privateKey = "private_key"
        case publicJWK = "public_jwk"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(keyID, forKey: .keyID)
        try container.encodeIfPresent(publicJWK, forKey: .publicJWK)
    }
}

/// A pointer to a secret kept outside the database: an environment variable or a mounted file.
public enum SecretReference: Sendable, Hashable {
    case environment(String)
    case file(String)

    /// Parses `env:NAME` or `file:/absolute/path`.
    public init?(_ text: String) {
        if text.hasPrefix("env:") {
            let name = String(text.dropFirst(4))
            let valid =
                !name.isEmpty
                && name.utf8.allSatisfy { byte in
                    byte == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                        || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                }
            guard valid else { return nil }
            self = .environment(name)
        } else if text.hasPrefix("file:") {
            let path = String(text.dropFirst(5))
            guard path.hasPrefix("/") else { return nil }
            self = .file(path)
        } else {
            return nil
        }
    }
}
