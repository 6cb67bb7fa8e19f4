/// The public URLs of one tenant's authorization server (issuer and every endpoint).
struct TenantEndpoints: Sendable {
    let issuer: String
    let registrationGatewayPublicURL: String
    let tenant: String

    init(settings: TokenServiceSettings, tenant: String) {
        self.issuer = "\(settings.publicURL)/t/\(tenant)"
        self.registrationGatewayPublicURL = settings.registrationGatewayPublicURL
        self.tenant = tenant
    }

    var authorization: String { "\(issuer)/authorize" }
    var token: String { "\(issuer)/token" }
    var revocation: String { "\(issuer)/revoke" }
    var introspection: String { "\(issuer)/introspect" }
    var userinfo: String { "\(issuer)/userinfo" }
    var jwks: String { "\(issuer)/jwks" }
    /// OpenID Connect RP-Initiated Logout.
    var endSession: String { "\(issuer)/logout" }
    /// The gateway's RFC 7591 endpoint; also the audience of `dcr` tokens.
    var registration: String { "\(registrationGatewayPublicURL)/t/\(tenant)/register" }
    /// Audience of ordinary access tokens: the tenant's issuer (resources accept it explicitly).
    var defaultAudience: String { issuer }
}
