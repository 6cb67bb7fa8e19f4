import Foundation
import LatchkeyCore

/// Where an ``AccessTokenVerifier`` gets an issuer's signing keys (normally a ``JWKSCache``).
public protocol AccessTokenKeySource: Sendable {
    /// The issuer's keys that may have signed a token whose header names `kid` (every key when nil).
    func keys(issuer: String, kid: String?) async throws(AccessTokenError) -> [JWK]
}

/// Verifies RFC 9068 JWT access tokens (`typ` `at+jwt`) issued by Latchkey tenants.
///
/// Checks, in order: size, compact JWS, `typ`, allow-listed `alg`, typed claims, accepted `iss`
/// (before any key is looked up, so a token never makes us fetch an arbitrary issuer's keys),
/// signature with the issuer's key, `exp` and `nbf` with a small skew, `aud`, and the lifetime when it is bounded.
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
        /// Longest accepted lifetime (`exp` − `iat`), in seconds; nil accepts any.
        public var maximumLifetimeSeconds: Int64?

        public init(
            issuers: [String], audiences: Set<String>,
            allowedAlgorithms: Set<JWSAlgorithm> = Set(JWSAlgorithm.allCases),
            clockSkewSeconds: Int64 = 10, maximumTokenBytes: Int = 8 * 1024, maximumLifetimeSeconds: Int64? = nil
        ) {
            self.issuers = issuers
            self.audiences = audiences
            self.allowedAlgorithms = allowedAlgorithms
            self.clockSkewSeconds = clockSkewSeconds
            self.maximumTokenBytes = maximumTokenBytes
            self.maximumLifetimeSeconds = maximumLifetimeSeconds
        }
    }

    public static let tokenTypes: Set<String> = ["at+jwt", "application/at+jwt"]

    public let configuration: Configuration
    private let tenants: [String: TenantSlug]
    private let keySource: any AccessTokenKeySource
    private let clock: any WallClock

    /// Fails when an issuer is not of the form `{public URL}/t/{tenant}` or nothing is accepted.
    public init(
        configuration: Configuration, keySource: any AccessTokenKeySource,
        clock: any WallClock = SystemWallClock()
    ) throws(ConfigurationError) {
        guard !configuration.issuers.isEmpty else {
            throw ConfigurationError("at least one accepted issuer is required")
        }
        guard !configuration.audiences.isEmpty else {
            throw ConfigurationError("at least one accepted audience is required")
        }
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
        guard let url = URLComponents(string: issuer), let scheme = url.scheme?.lowercased(),
            scheme == "https" || scheme == "http",
            url.host?.isEmpty == false, url.query == nil, url.fragment == nil, url.user == nil
        else { return nil }
        // The raw path: a trailing slash or encoded characters make another issuer string.
        let parts = url.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[parts.count - 2] == "t" else { return nil }
        return TenantSlug(rawValue: String(parts[parts.count - 1]))
    }

    /// Verifies `token` against the configured issuers and audiences, fetching keys from the key source.
    public func verify(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken {
        let parsed = try Self.parse(
            token, allowedAlgorithms: configuration.allowedAlgorithms,
            maximumTokenBytes: configuration.maximumTokenBytes)
        // The issuer is checked before any key lookup, so a token never makes us fetch an arbitrary issuer's keys.
        guard let tenant = tenants[parsed.claims.iss] else { throw .untrustedIssuer }
        let candidates = try await keySource.keys(issuer: parsed.claims.iss, kid: parsed.kid)
        let audiences = configuration.audiences
        let claims = try Self.check(
            parsed, keys: candidates, clock: clock, clockSkewSeconds: configuration.clockSkewSeconds
        ) {
            $0.values.contains(where: audiences.contains)
        }
        // `exp` is near `now` or later here, so subtracting the bound cannot overflow.
        if let longest = configuration.maximumLifetimeSeconds, claims.iat < claims.exp - longest {
            throw .lifetimeTooLong
        }
        var jkt: String?
        if let cnf = claims.cnf {
            // Other confirmation methods (e.g. mTLS x5t#S256) cannot be checked here, so they are refused.
            guard let bound = cnf.jkt, !bound.isEmpty else { throw .malformed("cnf without jkt is not supported") }
            jkt = bound
        }
        return VerifiedAccessToken(
            issuer: claims.iss, tenant: tenant, subject: claims.sub, clientID: claims.clientID,
            scope: claims.scope, jkt: jkt, expiresAt: claims.exp, jti: claims.jti)
    }

    /// A structurally valid access token whose signature has not been checked yet.
    public struct Parsed: Sendable {
        public let jws: CompactJWS
        public let algorithm: JWSAlgorithm
        /// Unverified until ``AccessTokenVerifier/check(_:keys:clock:clockSkewSeconds:audience:)`` accepts them.
        public let claims: AccessTokenClaims
        public var kid: String? { jws.header.kid }
    }

    /// Size, compact JWS, `typ`, allow-listed `alg` and typed claims.
    public static func parse(
        _ token: String, allowedAlgorithms: Set<JWSAlgorithm> = Set(JWSAlgorithm.allCases),
        maximumTokenBytes: Int = 8 * 1024
    ) throws(AccessTokenError) -> Parsed {
        guard token.utf8.count <= maximumTokenBytes else { throw .malformed("longer than \(maximumTokenBytes) bytes") }
        do throws(JOSEError) {
            let jws = try CompactJWS(parsing: token, maximumLength: maximumTokenBytes)
            guard let typ = jws.header.typ, tokenTypes.contains(typ.lowercased()) else {
                throw JOSEError.malformed("typ must be at+jwt")
            }
            let algorithm = try jws.checkedAlgorithm(allowedAlgorithms)
            return Parsed(jws: jws, algorithm: algorithm, claims: try jws.claims(as: AccessTokenClaims.self))
        } catch {
            throw .malformed(error.reason)
        }
    }

    /// Signature with one of `keys`, `exp`/`nbf` with `clockSkewSeconds`, and `aud`; the caller has checked `iss`.
    public static func check(
        _ parsed: Parsed, keys: [JWK], clock: any WallClock = SystemWallClock(), clockSkewSeconds: Int64 = 10,
        audience accepts: (Audience) -> Bool
    ) throws(AccessTokenError) -> AccessTokenClaims {
        let candidates = parsed.kid.map { kid in keys.filter { $0.kid == kid } } ?? keys
        guard !candidates.isEmpty else { throw .invalidSignature("no key of the issuer matches the token's kid") }
        // Our JWKS always declares each key's alg: a key verifies only the algorithm it was made for.
        guard
            candidates.contains(where: {
                (try? parsed.jws.verify(
                    using: $0, allowedAlgorithms: [parsed.algorithm], requireDeclaredAlgorithm: true)) != nil
            })
        else { throw .invalidSignature("signature does not verify with the issuer's key") }
        let claims = parsed.claims
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        // Written so that extreme claim values cannot overflow (`now` and the skew are small).
        guard claims.exp > now - clockSkewSeconds else { throw .expired }
        if let nbf = claims.nbf, nbf > now, nbf - clockSkewSeconds > now { throw .notYetValid }
        guard accepts(claims.aud) else { throw .wrongAudience }
        return claims
    }
}
