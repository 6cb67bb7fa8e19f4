import Foundation

/// Why an access token was refused; the reason is safe to return in `error_description`.
public struct AccessTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Verifies Latchkey access tokens (RFC 9068): signature against the issuer's keys, `typ`, `iss`, `aud`,
/// `exp`/`nbf` with a small leeway.
public struct AccessTokenVerifier: Sendable {
    public var allowedAlgorithms: Set<JWSAlgorithm>
    public var leewaySeconds: Int64
    public var clock: any WallClock
    /// Upper bound on the compact token, so hostile input is refused before any parsing work.
    public var maximumLength: Int

    public init(
        allowedAlgorithms: Set<JWSAlgorithm> = Set(JWSAlgorithm.allCases), leewaySeconds: Int64 = 30,
        clock: any WallClock = SystemWallClock(), maximumLength: Int = 16 * 1024
    ) {
        self.allowedAlgorithms = allowedAlgorithms
        self.leewaySeconds = leewaySeconds
        self.clock = clock
        self.maximumLength = maximumLength
    }

    /// The parsed token, before any key is chosen (the caller needs `kid` to pick keys).
    public func parse(_ token: String) throws(AccessTokenError) -> CompactJWS {
        do {
            let jws = try CompactJWS(parsing: token, maximumLength: maximumLength)
            // RFC 9068 §2.1: "at+jwt" (the "application/" prefix may be present).
            guard let typ = jws.header.typ?.lowercased(), typ == "at+jwt" || typ == "application/at+jwt" else {
                throw AccessTokenError("token typ must be at+jwt")
            }
            return jws
        } catch let error as AccessTokenError {
            throw error
        } catch {
            throw AccessTokenError("malformed token")
        }
    }

    /// Verifies `token` against `keys` and returns its claims.
    public func verify(
        _ token: String, keys: JWKSet, issuer: String, audience: String
    ) throws(AccessTokenError) -> AccessTokenClaims {
        try verify(parse(token), keys: keys, issuer: issuer, audience: audience)
    }

    /// Verifies an already parsed token.
    public func verify(
        _ jws: CompactJWS, keys: JWKSet, issuer: String, audience: String
    ) throws(AccessTokenError) -> AccessTokenClaims {
        let candidates = jws.header.kid.flatMap { keys.key(withID: $0) }.map { [$0] } ?? keys.keys
        guard candidates.contains(where: { (try? jws.verify(using: $0, allowedAlgorithms: allowedAlgorithms)) != nil })
        else { throw AccessTokenError("token signature is invalid") }
        let claims: AccessTokenClaims
        do { claims = try jws.claims(as: AccessTokenClaims.self) } catch {
            throw AccessTokenError("token claims are malformed")
        }
        guard claims.iss == issuer else { throw AccessTokenError("token issuer is not accepted") }
        guard claims.aud.contains(audience) else { throw AccessTokenError("token audience is not accepted") }
        let now = Int64(clock.now().timeIntervalSince1970)
        guard claims.exp + leewaySeconds > now else { throw AccessTokenError("token has expired") }
        if let nbf = claims.nbf, nbf - leewaySeconds > now { throw AccessTokenError("token is not valid yet") }
        return claims
    }
}
