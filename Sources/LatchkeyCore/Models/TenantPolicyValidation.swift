import Foundation

/// One thing wrong with a tenant policy, located by its JSON path (e.g. `token_lifetimes.access_token`).
public struct PolicyProblem: Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// Why a policy document was refused; `description` is fit for an `error_description`.
public enum TenantPolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not JSON, a wrong type, or an unknown enum string.
    case malformed(String)
    /// Members the policy format does not have (usually typos), by JSON path.
    case unknownMembers([String])
    /// Well-formed, but values that make no sense.
    case invalid([PolicyProblem])

    public var description: String {
        switch self {
        case .malformed(let message): return "malformed policy: \(message)"
        case .unknownMembers(let paths): return "unknown policy members: \(paths.joined(separator: ", "))"
        case .invalid(let problems): return "invalid policy: " + problems.map(\.description).joined(separator: "; ")
        }
    }
}

extension TenantPolicy {
    /// Upper bound for every duration so arithmetic on `Date` never overflows: ten years.
    public static let maximumDurationSeconds = 315_360_000

    /// The strict reading the admin API applies to a submitted policy: strict JSON (duplicate members,
    /// U+0000 and the rest of what ``StrictJSONParser`` refuses), decode, refuse unknown members, then
    /// `validate()`.
    public static func parse(_ data: Data) throws(TenantPolicyError) -> TenantPolicy {
        let tree: JSONValue
        do { tree = try StrictJSONParser.parse(Array(data)) } catch { throw .malformed(error.description) }
        guard !JSONNULCheck.containsNUL(tree) else { throw .malformed("the policy must not contain U+0000 characters") }
        let policy: TenantPolicy
        do {
            policy = try LatchkeyJSON.decode(TenantPolicy.self, from: data)
        } catch let error as DecodingError {
            throw .malformed(error.readableDescription)
        } catch {
            throw .malformed(String(describing: error))
        }
        let unknown = unknownMembers(in: tree)
        guard unknown.isEmpty else { throw .unknownMembers(unknown) }
        let problems = policy.validate()
        guard problems.isEmpty else { throw .invalid(problems) }
        return policy
    }

    /// JSON paths of members in `tree` that the policy format does not define.
    public static func unknownMembers(in tree: JSONValue) -> [String] {
        var found: [String] = []
        func check<K: CodingKey & CaseIterable>(_ value: JSONValue?, _ keys: K.Type, at path: String) {
            guard let members = value?.objectValue else { return }
            let known = Set(K.allCases.map(\.stringValue))
            for name in members.keys.sorted() where !known.contains(name) {
                found.append(path.isEmpty ? name : "\(path).\(name)")
            }
        }
        check(tree, CodingKeys.self, at: "")
        check(tree["pkce"], PKCEPolicy.CodingKeys.self, at: "pkce")
        check(tree["dpop"], DPoPPolicy.CodingKeys.self, at: "dpop")
        check(tree["token_lifetimes"], TokenLifetimes.CodingKeys.self, at: "token_lifetimes")
        check(tree["consent"], ConsentPolicy.CodingKeys.self, at: "consent")
        check(tree["rate_limits"], RateLimits.CodingKeys.self, at: "rate_limits")
        check(tree["rate_limits"]?["registration"], RateLimit.CodingKeys.self, at: "rate_limits.registration")
        check(tree["rate_limits"]?["login"], RateLimit.CodingKeys.self, at: "rate_limits.login")
        check(tree["branding"], TenantBranding.CodingKeys.self, at: "branding")
        check(tree["password_policy"], PasswordPolicy.CodingKeys.self, at: "password_policy")
        for (index, issuer) in (tree["trusted_software_statement_issuers"]?.arrayValue ?? []).enumerated() {
            check(
                issuer, TrustedSoftwareStatementIssuer.CodingKeys.self,
                at: "trusted_software_statement_issuers[\(index)]")
        }
        for (index, provider) in (tree["upstream_identity_providers"]?.arrayValue ?? []).enumerated() {
            let path = "upstream_identity_providers[\(index)]"
            check(provider, UpstreamIdentityProvider.CodingKeys.self, at: path)
            check(
                provider["client_secret_jwt"], UpstreamClientSecretJWT.CodingKeys.self, at: "\(path).client_secret_jwt")
            check(provider["private_key_jwt"], UpstreamPrivateKeyJWT.CodingKeys.self, at: "\(path).private_key_jwt")
        }
        return found
    }

    /// Everything wrong with the values of this policy; empty when it can be used.
    public func validate() -> [PolicyProblem] {
        var problems: [PolicyProblem] = []
        func problem(_ path: String, _ message: String) {
            problems.append(PolicyProblem(path: path, message: message))
        }
        func duration(_ path: String, _ value: Int, zeroAllowed: Bool, max: Int = Self.maximumDurationSeconds) {
            if value < 0 || (value == 0 && !zeroAllowed) {
                problem(path, zeroAllowed ? "must be 0 or more seconds" : "must be at least 1 second")
            } else if value > max {
                problem(path, "must be at most \(max) seconds")
            }
        }
        func nonNegative(_ path: String, _ value: Int) {
            if value < 0 { problem(path, "must be 0 or more") }
        }

        if version < 1 { problem("version", "must be 1 or more") }

        for (index, scope) in allowedScopes.enumerated() {
            if !Self.isScopeToken(scope) {
                problem("allowed_scopes[\(index)]", "\"\(scope)\" is not an RFC 6749 scope token")
            } else if Self.reservedScopes.contains(scope) {
                problem("allowed_scopes[\(index)]", "\"\(scope)\" is reserved to the platform and cannot be registered")
            }
        }
        for (index, grant) in allowedGrantTypes.enumerated() where !grant.isSupported {
            problem("allowed_grant_types[\(index)]", "\"\(grant.rawValue)\" is not supported by the token service")
        }

        nonNegative("max_clients_per_user", maxClientsPerUser)
        duration("client_secret_lifetime", clientSecretLifetime, zeroAllowed: true)
        duration("client_secret_rotation_window", clientSecretRotationWindow, zeroAllowed: true)
        duration("client_secret_overlap", clientSecretOverlap, zeroAllowed: true, max: 2_592_000)
        duration("inactive_client_ttl", inactiveClientTTL, zeroAllowed: true)

        duration("token_lifetimes.access_token", tokenLifetimes.accessToken, zeroAllowed: false)
        duration("token_lifetimes.refresh_token", tokenLifetimes.refreshToken, zeroAllowed: false)
        duration("token_lifetimes.dcr_access_token", tokenLifetimes.dcrAccessToken, zeroAllowed: false, max: 3600)
        duration("token_lifetimes.authorization_code", tokenLifetimes.authorizationCode, zeroAllowed: false, max: 600)
        duration("token_lifetimes.id_token", tokenLifetimes.idToken, zeroAllowed: false)
        duration("token_lifetimes.sso_session", tokenLifetimes.ssoSession, zeroAllowed: false, max: 2_592_000)
        duration("token_lifetimes.refresh_grace", tokenLifetimes.refreshGrace, zeroAllowed: true, max: 60)

        duration("consent.remember_for", consent.rememberFor, zeroAllowed: true)

        nonNegative("rate_limits.registration.per_tenant_per_minute", rateLimits.registration.perTenantPerMinute)
        nonNegative("rate_limits.registration.per_source_per_minute", rateLimits.registration.perSourcePerMinute)
        nonNegative("rate_limits.login.per_tenant_per_minute", rateLimits.login.perTenantPerMinute)
        nonNegative("rate_limits.login.per_source_per_minute", rateLimits.login.perSourcePerMinute)
        nonNegative("rate_limits.login_per_user_per_minute", rateLimits.loginPerUserPerMinute)

        var issuersSeen: Set<String> = []
        for (index, trusted) in trustedSoftwareStatementIssuers.enumerated() {
            let path = "trusted_software_statement_issuers[\(index)]"
            if trusted.issuer.isEmpty { problem("\(path).issuer", "must not be empty") }
            if !issuersSeen.insert(trusted.issuer).inserted { problem("\(path).issuer", "is listed twice") }
            switch trusted.keys {
            case .jwksURI(let uri):
                if !PolicyURLRules.isHTTPS(uri) { problem("\(path).jwks_uri", "must be an absolute https URL") }
            case .jwks(let set):
                for message in Self.publicJWKSetProblems(set) { problem("\(path).jwks", message) }
            }
        }

        var providersSeen: Set<String> = []
        for (index, provider) in upstreamIdentityProviders.enumerated() {
            let path = "upstream_identity_providers[\(index)]"
            if !TenantSlug.isValid(provider.id) {
                problem("\(path).id", "must be a lower-case slug (it is a URL path segment)")
            }
            if !providersSeen.insert(provider.id).inserted { problem("\(path).id", "is listed twice") }
            if provider.displayName.isEmpty { problem("\(path).display_name", "must not be empty") }
            if !PolicyURLRules.isIssuerURL(provider.issuer) {
                problem("\(path).issuer", "must be an https URL (http only for loopback or single-label dev hosts)")
            }
            if provider.clientID.isEmpty { problem("\(path).client_id", "must not be empty") }
            if let reference = provider.clientSecretRef {
                if provider.clientSecretReference == nil {
                    problem("\(path).client_secret_ref", "must be env:NAME or file:/absolute/path")
                }
                if provider.clientSecret != nil {
                    problem(
                        "\(path).client_secret",
                        "give either client_secret or client_secret_ref, not both (\(reference.prefix(4))…)")
                }
            }
            if let secret = provider.clientSecret,
                secret.isEmpty || secret.utf8.count > 1024
                    || secret.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            {
                problem("\(path).client_secret", "must be 1 to 1024 printable characters")
            }
            if !provider.scopes.contains("openid") { problem("\(path).scopes", "must include openid") }
            for found in provider.credentialProblems() { problem("\(path).\(found.member)", found.message) }
        }

        if let name = branding.name, name.isEmpty || name.count > 100 {
            problem("branding.name", "must be 1 to 100 characters")
        }
        if let logo = branding.logoURL, !PolicyURLRules.isHTTPS(logo) {
            problem("branding.logo_url", "must be an absolute https URL")
        }
        if let color = branding.primaryColor, !Self.isHexColor(color) {
            problem("branding.primary_color", "must be #rgb or #rrggbb")
        }
        if let color = branding.backgroundColor, !Self.isHexColor(color) {
            problem("branding.background_color", "must be #rgb or #rrggbb")
        }

        if !Self.signingAlgorithms.contains(signingAlgorithm) {
            problem(
                "signing_algorithm",
                "must be one of " + Self.signingAlgorithms.map(\.rawValue).joined(separator: ", "))
        }

        for found in passwordPolicy.problems() { problem("password_policy.\(found.member)", found.message) }

        for (index, origin) in registrationCORSOrigins.enumerated() where !PolicyURLRules.isOrigin(origin) {
            problem(
                "registration_cors_origins[\(index)]",
                "\"\(origin)\" is not an origin (scheme://host[:port], no path, no wildcard)")
        }
        return problems
    }

    /// RFC 6749 §3.3 `scope-token`: one or more of %x21 / %x23-5B / %x5D-7E.
    public static func isScopeToken(_ candidate: String) -> Bool {
        !candidate.isEmpty
            && candidate.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }

    /// `#rgb` or `#rrggbb` (pages interpolate it into a style sheet, so nothing else may pass).
    public static func isHexColor(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "#"), bytes.count == 4 || bytes.count == 7 else { return false }
        return bytes.dropFirst().allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
        }
    }

    // An inline key set must hold public keys only: a policy is not a place for private keys.
    private static func publicJWKSetProblems(_ set: JSONValue) -> [String] {
        guard let keys = set["keys"]?.arrayValue else { return ["must be a JWK Set: an object with a keys array"] }
        if keys.isEmpty { return ["must contain at least one key"] }
        let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"]
        var problems: [String] = []
        for (index, key) in keys.enumerated() {
            guard let members = key.objectValue, members["kty"]?.stringValue != nil else {
                problems.append("keys[\(index)] must be a JWK with kty")
                continue
            }
            if privateMembers.contains(where: { members[$0] != nil }) {
                problems.append("keys[\(index)] contains private or symmetric key material")
            }
        }
        return problems
    }
}

/// URL shapes the policy accepts for issuers, logos and CORS origins.
enum PolicyURLRules {
    static func isHTTPS(_ text: String) -> Bool {
        guard let parts = URLComponents(string: text), parts.scheme?.lowercased() == "https",
            let host = parts.host, !host.isEmpty
        else { return false }
        return true
    }

    // Docker Compose and Kubernetes service names have no dot; plain http to them is a dev setup,
    // never a public identity provider.
    static func isIssuerURL(_ text: String) -> Bool {
        if isHTTPS(text) { return true }
        guard let parts = URLComponents(string: text), parts.scheme?.lowercased() == "http",
            let host = parts.host?.lowercased(), !host.isEmpty, parts.fragment == nil
        else { return false }
        return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == "[::1]" || !host.contains(".")
    }

    static func isOrigin(_ text: String) -> Bool {
        guard let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = parts.host, !host.isEmpty, !host.contains("*"),
            parts.path.isEmpty, parts.query == nil, parts.fragment == nil, parts.user == nil
        else { return false }
        return true
    }
}
