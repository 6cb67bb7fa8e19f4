import Foundation

/// Where an ``AccessTokenVerifier`` gets an issuer's signing keys (normally a ``JWKSCache``).
public protocol AccessTokenKeySource: Sendable {
    /// The issuer's keys that may have signed a token whose header names `kid` (every key when nil).
    func keys(issuer: String, kid: String?) async throws(AccessTokenError) -> [JWK]
}

/// Verifies RFC 9068 JWT access tokens (`typ` `at+jwt`) issued by Latchkey tenants.
///
/// Checks, in order: size, compact JWS, `typ`, allow-listed `alg`, typed claims, accepted `iss`
/// (before any key is looked up, so a token never makes us fetch an arbitrary issuer's keys),
/// signature with the issuer's key, `exp` and `nbf` with a small skew, and `aud`.
public struct AccessTokenVerifier: Sendable {
    /// Verifier settings.
    public struct Configuration: Sendable {
        /// Accepted issuers, each of the form `{public URL}/t/{tenant}`.
        public var issuers: [String]
        /// A token is accepted when its `aud` names at least one of these.
        public var audiences: Set<String>
        public var allowedAlgorithms: Set<JWSAlgorithm>
        /// Tolerance for `exp` and `nbf`, in seconds.
        public var clockSkewSeconds: Int64
        /// Largest accepted token, in bytes.
        public var maximumTokenBytes: Int

        public init(issuers: [String], audiences: Set<String>, allowedAlgorithms: Set<JWSAlgorithm> = Set(JWSAlgorithm.allCases),
                    clockSkewSeconds: Int64 = 10, maximumTokenBytes: Int = 8 * 1024) {
            self.issuers = issuers
            self.audiences = audiences
            self.allowedAlgorithms = allowedAlgorithms
            self.clockSkewSeconds = clockSkewSeconds
            self.maximumTokenBytes = maximumTokenBytes
        }
    }

    public static let tokenTypes: Set<String> = ["at+jwt", "application/at+jwt"]

    public let configuration: Configuration
    private let tenants: [String: TenantSlug]
    private let keySource: any AccessTokenKeySource
    private let clock: any WallClock

    /// Fails when an issuer is not of the form `{public URL}/t/{tenant}` or nothing is accepted.
    public init(configuration: Configuration, keySource: any AccessTokenKeySource,
                clock: any WallClock = SystemWallClock()) throws(ConfigurationError) {
        guard !configuration.issuers.isEmpty else { throw ConfigurationError("at least one accepted issuer is required") }
        guard !configuration.audiences.isEmpty else { throw ConfigurationError("at least one accepted audience is required") }
        var tenants: [String: TenantSlug] = [:]
        for issuer in configuration.issuers {
            guard let tenant = Self.tenant(ofIssuer: issuer) else {
                throw ConfigurationError("issuer \(issuer) is not of the form https://host/t/{tenant}")
            }
            tenants[issuer] = tenant
        }
        self.configuration = configuration
        self.tenants = tenants
        self.keySource = keySource
        self.clock = clock
    }

    /// The tenant of a Latchkey issuer URL `http(s)://host[:port][/prefix]/t/{tenant}`.
    public static func tenant(ofIssuer issuer: String) -> TenantSlug? {
        guard let url = URLComponents(string: issuer), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              url.host?.isEmpty == false, url.query == nil, url.fragment == nil, url.user == nil else { return nil }
        // The raw path: a trailing slash or encoded characters make another issuer string.
        let parts = url.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[parts.count - 2] == "t" else { return nil }
        return TenantSlug(rawValue: String(parts[parts.count - 1]))
    }

    public func verify(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken {
        let maximum = configuration.maximumTokenBytes
        guard token.utf8.count <= maximum else { throw .malformed("longer than \(maximum) bytes") }
        let jws: CompactJWS
        let algorithm: JWSAlgorithm
        let claims: AccessTokenClaims
        do throws(JOSEError) {
            jws = try CompactJWS(parsing: token, maximumLength: maximum)
            guard let typ = jws.header.typ, Self.tokenTypes.contains(typ.lowercased()) else {
                throw JOSEError.malformed("typ must be at+jwt")
            }
            algorithm = try jws.checkedAlgorithm(configuration.allowedAlgorithms)
            claims = try jws.claims(as: AccessTokenClaims.self)
        } catch {
            throw .malformed(error.reason)
        }
        guard let tenant = tenants[claims.iss] else { throw .untrustedIssuer }

        let candidates = try await keySource.keys(issuer: claims.iss, kid: jws.header.kid)
        guard !candidates.isEmpty else { throw .invalidSignature("no key of the issuer matches the token's kid") }
        guard candidates.contains(where: { (try? jws.verify(using: $0, allowedAlgorithms: [algorithm])) != nil }) else {
            throw .invalidSignature("signature does not verify with the issuer's key")
        }

        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let skew = configuration.clockSkewSeconds
        // Written so that extreme claim values cannot overflow (`now` and `skew` are small).
        guard claims.exp > now - skew else { throw .expired }
        if let nbf = claims.nbf, nbf > now, nbf - skew > now { throw .notYetValid }
        guard claims.aud.contains(where: configuration.audiences.contains) else { throw .wrongAudience }

        var jkt: String?
        if let cnf = claims.cnf {
            // Other confirmation methods (e.g. mTLS x5t#S256) cannot be checked here, so they are refused.
            guard let bound = cnf.jkt, !bound.isEmpty else { throw .malformed("cnf without jkt is not supported") }
            jkt = bound
        }
        return VerifiedAccessToken(issuer: claims.iss, tenant: tenant, subject: claims.sub, clientID: claims.clientID,
                                   scope: claims.scope, jkt: jkt, expiresAt: claims.exp)
    }
}
