import Foundation

/// Lifetimes, in seconds, of what the token service issues for a tenant.
public struct TokenLifetimes: Codable, Sendable, Hashable {
    public var accessToken: Int
    /// Absolute lifetime of a refresh token family, counted from the first grant.
    public var refreshToken: Int
    /// The `dcr`-scoped token a user obtains to register an app instance; kept short, since it only has to last until the registration.
    public var dcrAccessToken: Int
    /// RFC 6749 §4.1.2 recommends at most 10 minutes.
    public var authorizationCode: Int
    public var idToken: Int
    /// The sign-in session (SSO cookie) at the token service: within it, `/authorize` needs no new sign-in.
    public var ssoSession: Int
    /// Grace for concurrent refresh: within this many seconds after a rotation, the same old refresh token
    /// presented again with the same DPoP key gets the same successor instead of revoking the family
    /// (mobile apps refresh from several threads at once). 0 turns the grace off.
    public var refreshGrace: Int

    public init(
        accessToken: Int = 600,
        refreshToken: Int = 2_592_000,
        dcrAccessToken: Int = 300,
        authorizationCode: Int = 60,
        idToken: Int = 600,
        ssoSession: Int = 28_800,
        refreshGrace: Int = 10
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.dcrAccessToken = dcrAccessToken
        self.authorizationCode = authorizationCode
        self.idToken = idToken
        self.ssoSession = ssoSession
        self.refreshGrace = refreshGrace
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case accessToken = "access_token"
        case refreshToken = "refresh_token"
        case dcrAccessToken = "dcr_access_token"
        case authorizationCode = "authorization_code"
        case idToken = "id_token"
        case ssoSession = "sso_session"
        case refreshGrace = "refresh_grace"
    }

    public init(from decoder: any Decoder) throws {
        let defaults = TokenLifetimes()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decodeIfPresent(Int.self, forKey: .accessToken) ?? defaults.accessToken
        refreshToken = try container.decodeIfPresent(Int.self, forKey: .refreshToken) ?? defaults.refreshToken
        dcrAccessToken = try container.decodeIfPresent(Int.self, forKey: .dcrAccessToken) ?? defaults.dcrAccessToken
        authorizationCode =
            try container.decodeIfPresent(Int.self, forKey: .authorizationCode) ?? defaults.authorizationCode
        idToken = try container.decodeIfPresent(Int.self, forKey: .idToken) ?? defaults.idToken
        ssoSession = try container.decodeIfPresent(Int.self, forKey: .ssoSession) ?? defaults.ssoSession
        refreshGrace = try container.decodeIfPresent(Int.self, forKey: .refreshGrace) ?? defaults.refreshGrace
    }
}
