import Foundation
import Testing
@testable import Shared

@Suite struct AccessTokenVerifierTests {
    let signer = try! SigningKey.generate(.es256)
    let clock = FixedWallClock(unixSeconds: 1_800_000_000)
    let issuer = "https://as.example.com/t/acme"
    let audience = "https://api.example.com"

    var keys: JWKSet { JWKSet(keys: [signer.publicJWK(kid: "k1")]) }
    var verifier: AccessTokenVerifier { AccessTokenVerifier(clock: clock) }

    func claims(exp: Int64 = 1_800_000_300, nbf: Int64? = nil, aud: String? = nil, iss: String? = nil) -> AccessTokenClaims {
        AccessTokenClaims(
            iss: iss ?? issuer, sub: "user-1", aud: Audience(aud ?? audience), clientID: "client-1",
            scope: "openid api", jti: "j1", iat: 1_800_000_000, exp: exp, nbf: nbf,
            cnf: .init(jkt: "thumb"))
    }

    func token(_ claims: AccessTokenClaims, typ: String? = "at+jwt", kid: String = "k1", key: SigningKey? = nil) throws -> String {
        try CompactJWS.sign(claims: claims, using: key ?? signer, header: JWSHeaderParameters(typ: typ, kid: kid))
    }

    @Test func acceptsAValidToken() throws {
        let verified = try verifier.verify(try token(claims()), keys: keys, issuer: issuer, audience: audience)
        #expect(verified.clientID == "client-1")
        #expect(verified.scopes == ["openid", "api"])
        #expect(verified.cnf?.jkt == "thumb")
        // The "application/" form of the media type is accepted too (RFC 9068 §2.1).
        _ = try verifier.verify(try token(claims(), typ: "application/at+jwt"), keys: keys, issuer: issuer, audience: audience)
    }

    @Test(arguments: [
        ("wrong typ", "typ"), ("no typ", "notyp"), ("wrong issuer", "iss"), ("wrong audience", "aud"),
        ("expired", "exp"), ("not yet valid", "nbf"), ("other key", "key"), ("tampered", "tamper"),
    ])
    func refuses(_ name: String, _ variant: String) throws {
        let other = try SigningKey.generate(.es256)
        let compact: String = switch variant {
        case "typ": try token(claims(), typ: "JWT")
        case "notyp": try token(claims(), typ: nil)
        case "iss": try token(claims(iss: "https://evil.example.com/t/acme"))
        case "aud": try token(claims(aud: "https://other.example.com"))
        case "exp": try token(claims(exp: 1_799_999_000))
        case "nbf": try token(claims(nbf: 1_800_000_900))
        case "key": try token(claims(), key: other)
        default: String(try token(claims()).dropLast(3)) + "AAA"
        }
        #expect(throws: AccessTokenError.self, "\(name)") {
            try verifier.verify(compact, keys: keys, issuer: issuer, audience: audience)
        }
    }

    @Test func refusesHostileInputQuickly() {
        for hostile in ["", "a.b", "....", String(repeating: "A", count: 100_000), "eyJhbGciOiJub25lIn0.e30.", "x.y.z"] {
            #expect(throws: AccessTokenError.self) {
                try verifier.verify(hostile, keys: keys, issuer: issuer, audience: audience)
            }
        }
    }

    @Test func expiryAllowsTheLeewayOnly() throws {
        let justExpired = try token(claims(exp: 1_800_000_000 - 29))
        _ = try verifier.verify(justExpired, keys: keys, issuer: issuer, audience: audience)
        let longExpired = try token(claims(exp: 1_800_000_000 - 31))
        #expect(throws: AccessTokenError("token has expired")) {
            try verifier.verify(longExpired, keys: keys, issuer: issuer, audience: audience)
        }
    }
}
