import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import Logging

/// Verifies admin access tokens (RFC 9068 JWTs with scope `admin`) for admin APIs.
///
/// A token is accepted for tenant T when its issuer is `{issuerBase}/t/T` (an admin of that
/// tenant) or `{issuerBase}/t/{platform}` (a platform admin), its signature verifies with that
/// tenant's signing key named by `kid` (from `signing_keys`, read under the tenant's Row-Level
/// Security scope; `next` keys and retired keys past `publish_until` do not count), it has not
/// expired, its `aud` matches when audiences are configured, and it is not DPoP-bound (a bound
/// token presented as Bearer is a downgrade). Failures answer 401 `invalid_token`; a valid token
/// without the `admin` scope answers 403 `insufficient_scope` (RFC 6750 §3.1).
public struct AdminTokenVerifier: Sendable {
    /// Largest token accepted, in bytes.
    public static let maximumTokenLength = 8 * 1024
    public static let requiredScope = "admin"

    public let keys: TenantSigningKeyStore
    /// The token service's public base URL; issuers are `{issuerBase}/t/{tenant}`.
    public let issuerBase: String
    /// The tenant whose admins may act on every tenant, if any.
    public let platformTenant: TenantSlug?
    /// Accepted `aud` values; nil accepts any audience.
    public let audiences: Set<String>?
    /// Allowed clock difference for `exp`, `nbf` and `iat`.
    public let leeway: TimeInterval
    public let clock: any WallClock
    /// `realm` of `WWW-Authenticate` challenges.
    public let realm: String

    public init(
        keys: TenantSigningKeyStore, issuerBase: String, platformTenant: TenantSlug?, audiences: Set<String>? = nil,
        leeway: TimeInterval = 30, clock: any WallClock = SystemWallClock(), realm: String = "latchkey"
    ) {
        self.keys = keys
        self.issuerBase = issuerBase.hasSuffix("/") ? String(issuerBase.dropLast()) : issuerBase
        self.platformTenant = platformTenant
        self.audiences = audiences
        self.leeway = leeway
        self.clock = clock
        self.realm = realm
    }

    /// The principal behind `authorization` (the raw `Authorization` header) for work on `tenant`.
    public func verify(authorization: String?, for tenant: TenantSlug) async throws -> AdminPrincipal {
        guard let authorization, !authorization.isEmpty else {
            throw challenge(nil, "missing bearer token")
        }
        guard let space = authorization.firstIndex(of: " "),
            authorization[..<space].caseInsensitiveCompare("Bearer") == .orderedSame
        else {
            throw challenge("invalid_request", "the Authorization header must use the Bearer scheme")
        }
        let token = authorization[authorization.index(after: space)...].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { throw challenge("invalid_request", "the bearer token is empty") }
        guard token.utf8.count <= Self.maximumTokenLength else { throw invalid("the token is too long") }

        let jws: CompactJWS
        let claims: AdminTokenClaims
        do throws(JOSEError) {
            jws = try CompactJWS(parsing: token, maximumLength: Self.maximumTokenLength)
            claims = try jws.claims(as: AdminTokenClaims.self)
        } catch {
            throw invalid("the token is not a well-formed JWT: \(error.reason)")
        }
        guard let typ = jws.header.typ?.lowercased(), typ == "at+jwt" || typ == "application/at+jwt" else {
            throw invalid("the token is not a JWT access token (typ at+jwt)")
        }
        // Header and claim strings are used in queries; U+0000 cannot reach PostgreSQL.
        guard jws.header.kid?.utf8.contains(0) != true, claims.sub?.utf8.contains(0) != true else {
            throw invalid("the token is not a well-formed JWT: a member contains U+0000")
        }
        let issuerTenant = try self.issuerTenant(claims.iss, accessing: tenant)
        let key = try await signingKey(tenant: issuerTenant, kid: jws.header.kid)
        do {
            try jws.verify(using: key.jwk, allowedAlgorithms: [key.algorithm], requireDeclaredAlgorithm: true)
        } catch {
            throw invalid("the token signature does not verify")
        }
        try checkTimes(claims)
        if let audiences {
            guard !audiences.isDisjoint(with: claims.aud ?? []) else {
                throw invalid("the token is not meant for this API")
            }
        }
        guard claims.cnf == nil else {
            throw invalid("a DPoP-bound token cannot be used as a Bearer token")
        }
        guard let subject = claims.sub, !subject.isEmpty else { throw invalid("the token has no subject") }
        let scopes = (claims.scope ?? "").split(separator: " ")
        guard scopes.contains(Substring(Self.requiredScope)) else {
            throw OAuthError(
                .forbidden, "insufficient_scope", "the token lacks the admin scope",
                headers: [.wwwAuthenticate: "Bearer realm=\"\(realm)\", error=\"insufficient_scope\", scope=\"admin\""])
        }
        // Administration is done by clients for themselves (client_credentials: `sub` = `client_id`);
        // a token issued to a user never administers, whatever scope it carries.
        guard let clientID = claims.clientID, ConstantTime.equals(clientID, subject) else {
            throw invalid("admin tokens are issued to a client for itself (client_credentials), never to a user")
        }
        return AdminPrincipal(
            issuerTenant: issuerTenant, subject: subject, clientID: claims.clientID,
            isPlatformAdmin: issuerTenant == platformTenant)
    }

    private func issuerTenant(_ issuer: String?, accessing tenant: TenantSlug) throws -> TenantSlug {
        let prefix = issuerBase + "/t/"
        guard let issuer, issuer.hasPrefix(prefix),
            let slug = TenantSlug(rawValue: String(issuer.dropFirst(prefix.count)))
        else { throw invalid("the token was not issued by this platform") }
        guard slug == tenant || slug == platformTenant else {
            throw invalid("the token was not issued for this tenant")
        }
        return slug
    }

    private func signingKey(tenant: TenantSlug, kid: String?) async throws -> TenantSigningKeyStore.PublicKey {
        let key: TenantSigningKeyStore.PublicKey?
        do {
            key = try await keys.verificationKey(tenant: tenant, kid: kid, at: clock.now())
        } catch let error as JOSEError {
            throw invalid("the tenant's signing key is unusable: \(error.reason)")
        }
        guard let key else { throw invalid("no usable signing key matches the token") }
        return key
    }

    private func checkTimes(_ claims: AdminTokenClaims) throws {
        let now = clock.now().timeIntervalSince1970
        guard let exp = claims.exp else { throw invalid("the token has no expiry") }
        guard exp + leeway > now else { throw invalid("the token has expired") }
        if let nbf = claims.nbf, nbf - leeway > now { throw invalid("the token is not valid yet") }
        if let iat = claims.iat, iat - leeway > now { throw invalid("the token was issued in the future") }
    }

    private func invalid(_ description: String) -> OAuthError {
        challenge("invalid_token", description)
    }

    /// 401 with a `WWW-Authenticate: Bearer` challenge; `code` nil means "no credentials were sent".
    private func challenge(_ code: String?, _ description: String) -> OAuthError {
        var value = "Bearer realm=\"\(realm)\""
        if let code { value += ", error=\"\(code)\"" }
        return OAuthError(.unauthorized, code ?? "invalid_token", description, headers: [.wwwAuthenticate: value])
    }
}

/// The claims of an RFC 9068 access token that admin verification reads.
struct AdminTokenClaims: Decodable {
    var iss: String?
    var sub: String?
    var aud: [String]?
    var exp: Double?
    var nbf: Double?
    var iat: Double?
    var scope: String?
    var clientID: String?
    var cnf: JSONValue?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, nbf, iat, scope, cnf
        case clientID = "client_id"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decodeIfPresent(String.self, forKey: .iss)
        sub = try c.decodeIfPresent(String.self, forKey: .sub)
        // RFC 7519 §4.1.3: one audience may be a plain string.
        if let single = try? c.decodeIfPresent(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try c.decodeIfPresent([String].self, forKey: .aud)
        }
        exp = try c.decodeIfPresent(Double.self, forKey: .exp)
        nbf = try c.decodeIfPresent(Double.self, forKey: .nbf)
        iat = try c.decodeIfPresent(Double.self, forKey: .iat)
        scope = try c.decodeIfPresent(String.self, forKey: .scope)
        clientID = try c.decodeIfPresent(String.self, forKey: .clientID)
        cnf = try c.decodeIfPresent(JSONValue.self, forKey: .cnf)
    }
}
