import LatchkeyCore

/// Who an admin request is from, once ``AdminAuthMiddleware`` verified its credential.
public struct AdminPrincipal: Sendable, Equatable {
    /// How the caller proved who it is.
    public enum Credential: Sendable, Equatable {
        /// An admin access token (``AdminTokenVerifier``).
        case accessToken
        /// The operator's bootstrap key, accepted only where the first tenant and client are created.
        case bootstrapKey
    }

    /// The tenant whose issuer signed the token (for the bootstrap key: the tenant acted on).
    public var issuerTenant: TenantSlug
    /// `sub` of the token (the admin client for client-credentials tokens), or `bootstrap`.
    public var subject: String
    public var clientID: String?
    /// True when the token came from the platform tenant and may act on every tenant.
    public var isPlatformAdmin: Bool
    public var credential: Credential

    public init(
        issuerTenant: TenantSlug, subject: String, clientID: String?, isPlatformAdmin: Bool,
        credential: Credential = .accessToken
    ) {
        self.issuerTenant = issuerTenant
        self.subject = subject
        self.clientID = clientID
        self.isPlatformAdmin = isPlatformAdmin
        self.credential = credential
    }

    /// The bootstrap key acting on `tenant`.
    public static func bootstrapKey(acting tenant: TenantSlug) -> AdminPrincipal {
        AdminPrincipal(
            issuerTenant: tenant, subject: "bootstrap", clientID: nil, isPlatformAdmin: false, credential: .bootstrapKey
        )
    }

    /// The actor recorded in events and change logs.
    public var actor: EventActor { .admin(subject) }
}
