import Foundation

/// Requests allowed per minute for one kind of endpoint; 0 switches a limit off.
public struct RateLimit: Codable, Sendable, Hashable {
    /// Across the whole tenant, all sources together.
    public var perTenantPerMinute: Int
    /// Per client IP address (the source as the gateway sees it after trusted proxies).
    public var perSourcePerMinute: Int

    public init(perTenantPerMinute: Int, perSourcePerMinute: Int) {
        self.perTenantPerMinute = perTenantPerMinute
        self.perSourcePerMinute = perSourcePerMinute
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case perTenantPerMinute = "per_tenant_per_minute"
        case perSourcePerMinute = "per_source_per_minute"
    }

    // Decoded through `RateLimits`, which knows the defaults for each endpoint kind.
    init(from decoder: any Decoder, defaults: RateLimit) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        perTenantPerMinute =
            try container.decodeIfPresent(Int.self, forKey: .perTenantPerMinute) ?? defaults.perTenantPerMinute
        perSourcePerMinute =
            try container.decodeIfPresent(Int.self, forKey: .perSourcePerMinute) ?? defaults.perSourcePerMinute
    }

    // On its own a limit has no endpoint kind to take defaults from, so both members are required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        perTenantPerMinute = try container.decode(Int.self, forKey: .perTenantPerMinute)
        perSourcePerMinute = try container.decode(Int.self, forKey: .perSourcePerMinute)
    }
}

/// Rate limits of a tenant for registration and for sign-in (answered with 429 and `Retry-After`).
public struct RateLimits: Codable, Sendable, Hashable {
    public static let defaultRegistration = RateLimit(perTenantPerMinute: 600, perSourcePerMinute: 30)
    public static let defaultLogin = RateLimit(perTenantPerMinute: 3000, perSourcePerMinute: 60)

    /// `POST /t/{tenant}/register`.
    public var registration: RateLimit
    /// Login and sign-up form posts.
    public var login: RateLimit
    /// Failed-or-not login attempts against one username from addresses it never signed in from, to slow
    /// password guessing without locking the user out of the addresses they use.
    public var loginPerUserPerMinute: Int

    public init(
        registration: RateLimit = RateLimits.defaultRegistration,
        login: RateLimit = RateLimits.defaultLogin,
        loginPerUserPerMinute: Int = 10
    ) {
        self.registration = registration
        self.login = login
        self.loginPerUserPerMinute = loginPerUserPerMinute
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case registration
        case login
        case loginPerUserPerMinute = "login_per_user_per_minute"
    }

    public init(from decoder: any Decoder) throws {
        let defaults = RateLimits()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        registration =
            try container.decodeIfPresent(RateLimitDefaults<Registration>.self, forKey: .registration)?.limit
            ?? defaults.registration
        login = try container.decodeIfPresent(RateLimitDefaults<Login>.self, forKey: .login)?.limit ?? defaults.login
        loginPerUserPerMinute =
            try container.decodeIfPresent(Int.self, forKey: .loginPerUserPerMinute) ?? defaults.loginPerUserPerMinute
    }

    // A partially given limit keeps the defaults of its own endpoint kind for the missing member.
    private protocol DefaultLimit { static var limit: RateLimit { get } }
    private enum Registration: DefaultLimit { static var limit: RateLimit { RateLimits.defaultRegistration } }
    private enum Login: DefaultLimit { static var limit: RateLimit { RateLimits.defaultLogin } }
    private struct RateLimitDefaults<Kind: DefaultLimit>: Decodable {
        let limit: RateLimit
        init(from decoder: any Decoder) throws { limit = try RateLimit(from: decoder, defaults: Kind.limit) }
    }
}
