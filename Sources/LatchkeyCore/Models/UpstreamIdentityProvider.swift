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

    public init(
        id: String,
        displayName: String,
        issuer: String,
        clientID: String,
        clientSecretRef: String? = nil,
        clientSecret: String? = nil,
        scopes: [String] = ["openid", "profile", "email"]
    ) {
        self.id = id
        self.displayName = displayName
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecretRef = clientSecretRef
        self.clientSecret = clientSecret
        self.scopes = scopes
    }

    /// `clientSecretRef` parsed; `nil` when absent or with neither prefix.
    public var clientSecretReference: SecretReference? { clientSecretRef.flatMap(SecretReference.init) }

    /// Associated data of this provider's sealed secret: a sealed value copied to another tenant or
    /// provider does not open.
    public static func sealedSecretContext(tenant: String, provider: String) -> Data {
        Data("latchkey upstream client secret\u{0}\(tenant)\u{0}\(provider)".utf8)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case displayName = "display_name"
        case issuer
        case clientID = "client_id"
        case clientSecretRef = "client_secret_ref"
        case clientSecret = "client_secret"
        case scopes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(issuer, forKey: .issuer)
        try container.encode(clientID, forKey: .clientID)
        try container.encodeIfPresent(clientSecretRef, forKey: .clientSecretRef)
        try container.encode(scopes, forKey: .scopes)
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
