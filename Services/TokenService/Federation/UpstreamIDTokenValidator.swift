import Foundation
import LatchkeyCore

/// The claims of an upstream ID token Latchkey reads (OpenID Connect Core §2).
struct UpstreamIDTokenClaims: Decodable, Sendable {
    let iss: String
    let sub: String
    let aud: [String]
    let azp: String?
    let exp: Int64
    let iat: Int64
    let nonce: String?
    let preferredUsername: String?
    let email: String?
    /// The provider vouches for `email` (OpenID Connect Core §5.1); anything but `true` means no.
    let emailVerified: Bool

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, azp, exp, iat, nonce, email
        case preferredUsername = "preferred_username"
        case emailVerified = "email_verified"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decode(String.self, forKey: .iss)
        sub = try c.decode(String.self, forKey: .sub)
        // `aud` is a string or an array of strings (RFC 7519 §4.1.3).
        if let single = try? c.decode(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try c.decode([String].self, forKey: .aud)
        }
        azp = try c.decodeIfPresent(String.self, forKey: .azp)
        exp = try c.decode(Int64.self, forKey: .exp)
        iat = try c.decode(Int64.self, forKey: .iat)
        nonce = try c.decodeIfPresent(String.self, forKey: .nonce)
        preferredUsername = try? c.decodeIfPresent(String.self, forKey: .preferredUsername)
        email = try? c.decodeIfPresent(String.self, forKey: .email)
        // Some providers (Sign in with Apple) send the boolean as the string "true".
        emailVerified =
            (try? c.decodeIfPresent(Bool.self, forKey: .emailVerified)) == true
            || (try? c.decodeIfPresent(String.self, forKey: .emailVerified)) == "true"
    }
}

/// Validates an upstream ID token (OpenID Connect Core §3.1.3.7): signature with one of the provider's
/// keys, `iss`, `aud` (and `azp` with several audiences), `exp`/`iat` within a small skew, `nonce`.
struct UpstreamIDTokenValidator: Sendable {
    let issuer: String
    let clientID: String
    var clockSkewSeconds: Int64 = 60
    /// An `iat` further in the past than this is refused (a replayed old token).
    var maximumAgeSeconds: Int64 = 600

    struct Rejection: Error, CustomStringConvertible, Equatable {
        let description: String
    }

    /// A structural parse (size, segments, header) before any key is looked up.
    static func parse(_ token: String) throws -> CompactJWS {
        do throws(JOSEError) { return try CompactJWS(parsing: token, maximumLength: 16 * 1024) } catch {
            throw Rejection(description: "malformed ID token: \(error.reason)")
        }
    }

    func validate(_ jws: CompactJWS, keys: [JWK], nonce expectedNonce: String, now: Date = Date()) throws
        -> UpstreamIDTokenClaims
    {
        let algorithms = Set(JWSAlgorithm.allCases)
        let candidates = jws.header.kid.map { kid in keys.filter { $0.kid == kid } } ?? keys
        guard candidates.contains(where: { (try? jws.verify(using: $0, allowedAlgorithms: algorithms)) != nil }) else {
            throw Rejection(description: "signature does not verify with the provider's keys")
        }
        let claims: UpstreamIDTokenClaims
        do { claims = try jws.claims(as: UpstreamIDTokenClaims.self) } catch {
            throw Rejection(description: "ID token claims are malformed")
        }
        guard claims.iss == issuer else { throw Rejection(description: "wrong issuer") }
        guard claims.aud.contains(clientID) else { throw Rejection(description: "wrong audience") }
        if claims.aud.count > 1 || claims.azp != nil {
            guard claims.azp == clientID else { throw Rejection(description: "wrong authorized party") }
        }
        let current = Int64(now.timeIntervalSince1970.rounded(.down))
        guard claims.exp > current - clockSkewSeconds else { throw Rejection(description: "expired") }
        guard claims.iat <= current + clockSkewSeconds, claims.iat >= current - maximumAgeSeconds else {
            throw Rejection(description: "issued at an unacceptable time")
        }
        guard let nonce = claims.nonce, ConstantTime.equals(nonce, expectedNonce) else {
            throw Rejection(description: "nonce does not match")
        }
        guard !claims.sub.isEmpty, claims.sub.utf8.count <= 255 else { throw Rejection(description: "bad subject") }
        return claims
    }
}
