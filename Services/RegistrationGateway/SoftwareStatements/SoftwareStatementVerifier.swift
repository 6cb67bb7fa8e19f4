import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer

/// Verifies RFC 7591 §2.3 software statements against the issuers a tenant's policy trusts and
/// returns the metadata their claims carry.
///
/// Checks, in order: size and compact JWS structure, `typ` (absent or `JWT`), an implemented
/// asymmetric `alg` (never `none` or `HS*`), typed `iss`/`exp`/`nbf`/`iat`, the issuer against the
/// tenant's `trusted_software_statement_issuers` (before any key is fetched), the signature with a
/// key of that issuer matching `kid` and `alg`, then the time claims with a small skew.
struct SoftwareStatementVerifier: Sendable {
    /// Largest accepted statement, in bytes.
    static let maximumLength = 16 * 1024
    /// Tolerance for `exp`, `nbf` and `iat`, in seconds.
    static let clockSkewSeconds: Int64 = 60

    let keys: SoftwareStatementKeySource
    var clock: any WallClock = SystemWallClock()

    /// The time claims and issuer of a statement, typed; every other claim is client metadata.
    private struct RegisteredClaims: Decodable {
        let iss: String
        let exp: Int64?
        let nbf: Int64?
        let iat: Int64?
    }

    /// `request` with the claims of its verified `software_statement` (if any) winning over the
    /// members it sent (RFC 7591 §3.1); the statement itself stays, to be echoed in the response.
    func applying(to request: ClientMetadata, policy: TenantPolicy) async throws -> ClientMetadata {
        guard let statement = request.softwareStatement else { return request }
        return request.overridden(by: try await verify(statement, policy: policy))
    }

    /// The statement's claims as client metadata (its own `software_statement` member dropped).
    func verify(_ statement: String, policy: TenantPolicy) async throws -> ClientMetadata {
        let jws: CompactJWS
        let algorithm: JWSAlgorithm
        let claims: RegisteredClaims
        do throws(JOSEError) {
            jws = try CompactJWS(parsing: statement, maximumLength: Self.maximumLength)
            if let typ = jws.header.typ, typ.uppercased() != "JWT" {
                throw JOSEError.malformed("typ must be JWT when present")
            }
            algorithm = try jws.checkedAlgorithm(Set(JWSAlgorithm.allCases))
            claims = try jws.claims(as: RegisteredClaims.self)
        } catch {
            throw Self.invalid(error.reason)
        }
        guard !claims.iss.isEmpty, let trusted = policy.trustedIssuer(claims.iss) else {
            throw OAuthError(
                .badRequest, "unapproved_software_statement",
                "the software statement's issuer is not trusted by this tenant")
        }
        let candidates = try await keys.keys(for: trusted, kid: jws.header.kid).filter(algorithm.matches)
        guard !candidates.isEmpty else {
            throw Self.invalid("no key of the issuer matches the statement's kid and alg")
        }
        guard candidates.contains(where: { (try? jws.verify(using: $0, allowedAlgorithms: [algorithm])) != nil }) else {
            throw Self.invalid("the signature does not verify with the issuer's keys")
        }
        try checkTimes(claims)
        // The claims are metadata sent from outside like the body itself, and read the same strict way.
        do throws(JSONRequestBody.Problem) {
            var metadata = try JSONRequestBody(Array(jws.payload)).decode(ClientMetadata.self)
            metadata.softwareStatement = nil
            return metadata
        } catch {
            throw Self.invalid("claims are not valid client metadata: \(error.description)")
        }
    }

    /// `exp` in the future, `nbf` and `iat` not in the future (each with the skew), when present.
    private func checkTimes(_ claims: RegisteredClaims) throws {
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        // Written so that extreme claim values cannot overflow (`now` and the skew are small).
        if let exp = claims.exp, exp <= now - Self.clockSkewSeconds {
            throw Self.invalid("the software statement has expired")
        }
        if let nbf = claims.nbf, nbf > now, nbf - Self.clockSkewSeconds > now {
            throw Self.invalid("the software statement is not valid yet")
        }
        if let iat = claims.iat, iat > now, iat - Self.clockSkewSeconds > now {
            throw Self.invalid("the software statement was issued in the future")
        }
    }

    static func invalid(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_software_statement", description)
    }
}
