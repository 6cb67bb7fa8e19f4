import Foundation

/// A tenant's policy: versioned JSON where every member is optional and has a default.
///
/// Decoding is tolerant of members it does not know, so a service one release behind can still
/// read a policy written by a newer gateway; the admin API uses `parse(_:)`, which refuses unknown
/// members (typos) and runs `validate()`. Unknown enum strings always fail to decode.
public struct TenantPolicy: Codable, Sendable, Hashable {
    /// Scopes only the platform grants (registration, administration) or an administrator gives a client
    /// (`introspect`, `account`); never registrable through dynamic registration.
    public static let reservedScopes: Set<String> = ["dcr", "admin", introspectionScope, accountScope]
    /// The signed-in user's own devices (the token service's account API); only clients an administrator
    /// made, such as the tenant's own app, may ask for it.
    public static let accountScope = "account"
    /// A client capability, set by an administrator: introspect tokens issued to other clients. Never
    /// carried by a token.
    public static let introspectionScope = "introspect"

    /// What to do when a registration asks for scopes outside `allowedScopes`.
    public enum DisallowedScopeBehavior: String, ProtocolStringEnum {
        /// Refuse the registration with `invalid_client_metadata`.
        case reject
        /// Register the client with the allowed subset only.
        case trim

        public static var valueDescription: String { "disallowed scope behavior" }
    }

    /// Revision of this policy; the gateway increments it on each update so audit records and
    /// caches can name the policy in force.
    public var version: Int
    /// Dynamic registration mechanisms the tenant accepts at `POST /t/{tenant}/register`.
    public var registrationMechanisms: [RegistrationMechanism]
    /// Scopes a client may register and request.
    public var allowedScopes: [String]
    public var disallowedScopeBehavior: DisallowedScopeBehavior
    /// Grant types a dynamically registered client may use.
    public var allowedGrantTypes: [GrantType]
    /// Active clients one user may have registered; 0 means no limit.
    public var maxClientsPerUser: Int
    /// Seconds a client secret stays valid after issue; 0 means it never expires.
    public var clientSecretLifetime: Int
    /// An RFC 7592 PUT issues a new client secret when the current one expires within this many seconds.
    public var clientSecretRotationWindow: Int
    /// Seconds a rotated-out client secret still authenticates, so instances holding it never lock
    /// themselves out while they switch (never beyond its own expiry); 0 ends it at once.
    public var clientSecretOverlap: Int
    /// Issue a new registration access token on every RFC 7592 PUT (the old one stops working).
    public var rotateRegistrationAccessToken: Bool
    /// Seconds without use after which a dynamic client is expired; 0 means never.
    public var inactiveClientTTL: Int
    public var pkce: PKCEPolicy
    public var dpop: DPoPPolicy
    public var tokenLifetimes: TokenLifetimes
    public var consent: ConsentPolicy
    public var rateLimits: RateLimits
    public var trustedSoftwareStatementIssuers: [TrustedSoftwareStatementIssuer]
    public var upstreamIdentityProviders: [UpstreamIdentityProvider]
    public var branding: TenantBranding
    /// Browser origins allowed to call the registration endpoint (CORS), e.g. `https://app.example.com`.
    public var registrationCORSOrigins: [String]
    /// Algorithm of the tenant's token-signing key (access and ID tokens): one of `signingAlgorithms`.
    /// Changing it stages a key of the new algorithm, which the token service then activates (rotation).
    public var signingAlgorithm: JWSAlgorithm
    /// Whether users may create their own accounts on the sign-up page. Unset means on, except in the
    /// platform tenant, whose users could otherwise reach a platform administrator's sign-in.
    public var selfSignup: Bool?
    /// Rules for user passwords or PINs, wherever one is set.
    public var passwordPolicy: PasswordPolicy

    /// Algorithms a tenant may sign its tokens with.
    public static let signingAlgorithms: [JWSAlgorithm] = [.es256, .rs256, .edDSA]

    public init(
        version: Int = 1,
        registrationMechanisms: [RegistrationMechanism] = [.userToken, .initialAccessToken],
        allowedScopes: [String] = ["openid", "profile", "email", "offline_access"],
        disallowedScopeBehavior: DisallowedScopeBehavior = .reject,
        allowedGrantTypes: [GrantType] = [.authorizationCode, .refreshToken],
        maxClientsPerUser: Int = 10,
        clientSecretLifetime: Int = 0,
        clientSecretRotationWindow: Int = 604_800,
        clientSecretOverlap: Int = 86_400,
        rotateRegistrationAccessToken: Bool = true,
        inactiveClientTTL: Int = 7_776_000,
        pkce: PKCEPolicy = PKCEPolicy(),
        dpop: DPoPPolicy = DPoPPolicy(),
        tokenLifetimes: TokenLifetimes = TokenLifetimes(),
        consent: ConsentPolicy = ConsentPolicy(),
        rateLimits: RateLimits = RateLimits(),
        trustedSoftwareStatementIssuers: [TrustedSoftwareStatementIssuer] = [],
        upstreamIdentityProviders: [UpstreamIdentityProvider] = [],
        branding: TenantBranding = TenantBranding(),
        registrationCORSOrigins: [String] = [],
        signingAlgorithm: JWSAlgorithm = .es256,
        selfSignup: Bool? = nil,
        passwordPolicy: PasswordPolicy = PasswordPolicy()
    ) {
        self.version = version
        self.registrationMechanisms = registrationMechanisms
        self.allowedScopes = allowedScopes
        self.disallowedScopeBehavior = disallowedScopeBehavior
        self.allowedGrantTypes = allowedGrantTypes
        self.maxClientsPerUser = maxClientsPerUser
        self.clientSecretLifetime = clientSecretLifetime
        self.clientSecretRotationWindow = clientSecretRotationWindow
        self.clientSecretOverlap = clientSecretOverlap
        self.rotateRegistrationAccessToken = rotateRegistrationAccessToken
        self.inactiveClientTTL = inactiveClientTTL
        self.pkce = pkce
        self.dpop = dpop
        self.tokenLifetimes = tokenLifetimes
        self.consent = consent
        self.rateLimits = rateLimits
        self.trustedSoftwareStatementIssuers = trustedSoftwareStatementIssuers
        self.upstreamIdentityProviders = upstreamIdentityProviders
        self.branding = branding
        self.registrationCORSOrigins = registrationCORSOrigins
        self.signingAlgorithm = signingAlgorithm
        self.selfSignup = selfSignup
        self.passwordPolicy = passwordPolicy
    }

    /// Whether the sign-up page is open in this tenant (`isPlatformTenant`: it is `PLATFORM_TENANT`).
    public func allowsSelfSignup(isPlatformTenant: Bool) -> Bool {
        selfSignup ?? !isPlatformTenant
    }

    /// The policy a new tenant gets: the same as decoding `{}`.
    public static var `default`: TenantPolicy { TenantPolicy() }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case version
        case registrationMechanisms = "registration_mechanisms"
        case allowedScopes = "allowed_scopes"
        case disallowedScopeBehavior = "disallowed_scope_behavior"
        case allowedGrantTypes = "allowed_grant_types"
        case maxClientsPerUser = "max_clients_per_user"
        case clientSecretLifetime = "client_secret_lifetime"
        case clientSecretRotationWindow = "client_secret_rotation_window"
        case clientSecretOverlap = "client_secret_overlap"
        case rotateRegistrationAccessToken = "rotate_registration_access_token"
        case inactiveClientTTL = "inactive_client_ttl"
        case pkce
        case dpop
        case tokenLifetimes = "token_lifetimes"
        case consent
        case rateLimits = "rate_limits"
        case trustedSoftwareStatementIssuers = "trusted_software_statement_issuers"
        case upstreamIdentityProviders = "upstream_identity_providers"
        case branding
        case registrationCORSOrigins = "registration_cors_origins"
        case signingAlgorithm = "signing_algorithm"
        case selfSignup = "self_signup"
        case passwordPolicy = "password_policy"
    }

    public init(from decoder: any Decoder) throws {
        let d = TenantPolicy()
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decodeIfPresent(Int.self, forKey: .version) ?? d.version
        registrationMechanisms =
            try c.decodeIfPresent([RegistrationMechanism].self, forKey: .registrationMechanisms)
            ?? d.registrationMechanisms
        if registrationMechanisms.contains(.admin) {
            throw DecodingError.dataCorruptedError(
                forKey: .registrationMechanisms, in: c,
                debugDescription: "\"admin\" is not a dynamic registration mechanism; "
                    + "expected any of \"user_token\", \"initial_access_token\", \"open\"")
        }
        allowedScopes = try c.decodeIfPresent([String].self, forKey: .allowedScopes) ?? d.allowedScopes
        disallowedScopeBehavior =
            try c.decodeIfPresent(DisallowedScopeBehavior.self, forKey: .disallowedScopeBehavior)
            ?? d.disallowedScopeBehavior
        allowedGrantTypes = try c.decodeIfPresent([GrantType].self, forKey: .allowedGrantTypes) ?? d.allowedGrantTypes
        maxClientsPerUser = try c.decodeIfPresent(Int.self, forKey: .maxClientsPerUser) ?? d.maxClientsPerUser
        clientSecretLifetime =
            try c.decodeIfPresent(Int.self, forKey: .clientSecretLifetime) ?? d.clientSecretLifetime
        clientSecretRotationWindow =
            try c.decodeIfPresent(Int.self, forKey: .clientSecretRotationWindow) ?? d.clientSecretRotationWindow
        clientSecretOverlap = try c.decodeIfPresent(Int.self, forKey: .clientSecretOverlap) ?? d.clientSecretOverlap
        rotateRegistrationAccessToken =
            try c.decodeIfPresent(Bool.self, forKey: .rotateRegistrationAccessToken) ?? d.rotateRegistrationAccessToken
        inactiveClientTTL = try c.decodeIfPresent(Int.self, forKey: .inactiveClientTTL) ?? d.inactiveClientTTL
        pkce = try c.decodeIfPresent(PKCEPolicy.self, forKey: .pkce) ?? d.pkce
        dpop = try c.decodeIfPresent(DPoPPolicy.self, forKey: .dpop) ?? d.dpop
        tokenLifetimes = try c.decodeIfPresent(TokenLifetimes.self, forKey: .tokenLifetimes) ?? d.tokenLifetimes
        consent = try c.decodeIfPresent(ConsentPolicy.self, forKey: .consent) ?? d.consent
        rateLimits = try c.decodeIfPresent(RateLimits.self, forKey: .rateLimits) ?? d.rateLimits
        trustedSoftwareStatementIssuers =
            try c.decodeIfPresent([TrustedSoftwareStatementIssuer].self, forKey: .trustedSoftwareStatementIssuers)
            ?? d.trustedSoftwareStatementIssuers
        upstreamIdentityProviders =
            try c.decodeIfPresent([UpstreamIdentityProvider].self, forKey: .upstreamIdentityProviders)
            ?? d.upstreamIdentityProviders
        branding = try c.decodeIfPresent(TenantBranding.self, forKey: .branding) ?? d.branding
        registrationCORSOrigins =
            try c.decodeIfPresent([String].self, forKey: .registrationCORSOrigins) ?? d.registrationCORSOrigins
        selfSignup = try c.decodeIfPresent(Bool.self, forKey: .selfSignup)
        passwordPolicy = try c.decodeIfPresent(PasswordPolicy.self, forKey: .passwordPolicy) ?? d.passwordPolicy
        signingAlgorithm = d.signingAlgorithm
        if let name = try c.decodeIfPresent(String.self, forKey: .signingAlgorithm) {
            // Case-sensitive: "none", "HS256" or "es256" never select anything.
            guard let algorithm = JWSAlgorithm(parsing: name) else {
                let accepted = Self.signingAlgorithms.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                throw DecodingError.dataCorruptedError(
                    forKey: .signingAlgorithm, in: c,
                    debugDescription: "unknown signing algorithm \"\(name)\"; expected one of \(accepted)")
            }
            signingAlgorithm = algorithm
        }
    }

    /// Whether the registration endpoint accepts this mechanism.
    public func allows(_ mechanism: RegistrationMechanism) -> Bool {
        registrationMechanisms.contains(mechanism)
    }

    /// The provider with this id, if the tenant configured it.
    public func upstreamIdentityProvider(id: String) -> UpstreamIdentityProvider? {
        upstreamIdentityProviders.first { $0.id == id }
    }

    /// The trusted software statement issuer whose `iss` is `issuer`, if any.
    public func trustedIssuer(_ issuer: String) -> TrustedSoftwareStatementIssuer? {
        trustedSoftwareStatementIssuers.first { $0.issuer == issuer }
    }
}
