import LatchkeyCore

/// An access token whose signature and claims passed every check of ``AccessTokenVerifier``.
public struct VerifiedAccessToken: Sendable, Hashable {
    public let issuer: String
    /// The tenant of a Latchkey issuer (`{public}/t/{tenant}`).
    public let tenant: TenantSlug
    public let subject: String
    public let clientID: String
    /// Space-separated scopes, when the token has any.
    public let scope: String?
    /// `cnf.jkt`: the DPoP key thumbprint the token is bound to, nil for an unbound (Bearer) token.
    public let jkt: String?
    /// `exp`, Unix seconds.
    public let expiresAt: Int64
    /// `jti`: names the token in revocation events.
    public let jti: String

    public init(
        issuer: String, tenant: TenantSlug, subject: String, clientID: String, scope: String?, jkt: String?,
        expiresAt: Int64, jti: String = ""
    ) {
        self.issuer = issuer
        self.tenant = tenant
        self.subject = subject
        self.clientID = clientID
        self.scope = scope
        self.jkt = jkt
        self.expiresAt = expiresAt
        self.jti = jti
    }
}
