import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// The ID token checks of federation, with tokens signed here (a real provider never mints bad ones on demand).
@Suite struct UpstreamIDTokenValidatorTests {
    static let issuer = "https://idp.example.test"
    let key: SigningKey
    let jwks: [JWK]
    let validator = UpstreamIDTokenValidator(issuer: issuer, clientID: "latchkey")
    let now = Date()

    init() throws {
        key = try SigningKey.generate(.es256)
        jwks = [key.publicKey.jwk(kid: "k1", use: "sig", alg: .es256)]
    }

    struct Claims: Encodable {
        var iss = UpstreamIDTokenValidatorTests.issuer
        var sub = "user-1"
        var aud: [String] = ["latchkey"]
        var azp: String?
        var exp: Int64
        var iat: Int64
        var nonce: String? = "n-1"
        var preferredUsername: String? = "alice"

        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, azp, exp, iat, nonce
            case preferredUsername = "preferred_username"
        }
    }

    func claims(_ change: (inout Claims) -> Void = { _ in }) -> Claims {
        let seconds = Int64(now.timeIntervalSince1970)
        var claims = Claims(exp: seconds + 300, iat: seconds)
        change(&claims)
        return claims
    }

    func token(_ claims: Claims, key: SigningKey? = nil, kid: String? = "k1") throws -> CompactJWS {
        try UpstreamIDTokenValidator.parse(
            try CompactJWS.sign(
                claims: claims, using: key ?? self.key, header: JWSHeaderParameters(typ: "JWT", kid: kid)))
    }

    func rejection(_ claims: Claims, key: SigningKey? = nil, nonce: String = "n-1") throws -> String? {
        do {
            _ = try validator.validate(try token(claims, key: key), keys: jwks, nonce: nonce, now: now)
            return nil
        } catch let rejection as UpstreamIDTokenValidator.Rejection {
            return rejection.description
        }
    }

    @Test func aValidTokenPasses() throws {
        let validated = try validator.validate(try token(claims()), keys: jwks, nonce: "n-1", now: now)
        #expect(validated.sub == "user-1" && validated.preferredUsername == "alice")
    }

    @Test func wrongNonceAudienceIssuerAndAuthorizedPartyAreRefused() throws {
        #expect(try rejection(claims(), nonce: "n-2") == "nonce does not match")
        #expect(try rejection(claims { $0.nonce = nil }) == "nonce does not match")
        #expect(try rejection(claims { $0.aud = ["someone-else"] }) == "wrong audience")
        #expect(try rejection(claims { $0.iss = "https://evil.example.test" }) == "wrong issuer")
        #expect(try rejection(claims { $0.aud = ["latchkey", "other"] }) == "wrong authorized party")
        #expect(
            try rejection(
                claims {
                    $0.aud = ["latchkey", "other"]
                    $0.azp = "other"
                }) == "wrong authorized party")
        #expect(
            try rejection(
                claims {
                    $0.aud = ["latchkey", "other"]
                    $0.azp = "latchkey"
                }) == nil)
    }

    @Test func expiredFutureAndOldTokensAreRefused() throws {
        let seconds = Int64(now.timeIntervalSince1970)
        #expect(try rejection(claims { $0.exp = seconds - 120 }) == "expired")
        #expect(try rejection(claims { $0.exp = seconds - 30 }) == nil, "small clock skew is tolerated")
        #expect(try rejection(claims { $0.iat = seconds + 600 }) == "issued at an unacceptable time")
        #expect(try rejection(claims { $0.iat = seconds - 3600 }) == "issued at an unacceptable time")
    }

    @Test func signaturesOfOtherKeysAndMalformedTokensAreRefused() throws {
        let other = try SigningKey.generate(.es256)
        #expect(try rejection(claims(), key: other) == "signature does not verify with the provider's keys")
        #expect(throws: UpstreamIDTokenValidator.Rejection.self) {
            _ = try validator.validate(try token(claims(), kid: "unknown"), keys: jwks, nonce: "n-1", now: now)
        }
        #expect(throws: UpstreamIDTokenValidator.Rejection.self) { _ = try UpstreamIDTokenValidator.parse("not.a-jws") }
        #expect(throws: UpstreamIDTokenValidator.Rejection.self) {
            _ = try UpstreamIDTokenValidator.parse(String(repeating: "a", count: 20_000))
        }
    }
}

/// Provider keys of every tenant algorithm verify ID tokens, and only with their own key type.
@Suite struct UpstreamIDTokenAlgorithmTests {
    @Test(arguments: TenantPolicy.signingAlgorithms)
    func providerKeysOfEachAlgorithmVerifyAndForgeriesAgainstThemFail(algorithm: JWSAlgorithm) throws {
        let key = try SigningKey.generate(algorithm)
        let jwk = key.publicJWK(kid: "k1")
        let validator = UpstreamIDTokenValidator(issuer: UpstreamIDTokenValidatorTests.issuer, clientID: "latchkey")
        let now = Date()
        let seconds = Int64(now.timeIntervalSince1970)
        let claims = UpstreamIDTokenValidatorTests.Claims(exp: seconds + 300, iat: seconds)
        let token = try CompactJWS.sign(claims: claims, using: key, header: JWSHeaderParameters(typ: "JWT", kid: "k1"))
        #expect(
            try validator.validate(try UpstreamIDTokenValidator.parse(token), keys: [jwk], nonce: "n-1", now: now).sub
                == "user-1")
        for (name, forged) in try AlgorithmConfusion.forgeries(
            against: jwk, payload: try CompactJWS(parsing: token).payload, typ: "JWT")
        {
            #expect(throws: (any Error).self, "\(name)") {
                try validator.validate(try UpstreamIDTokenValidator.parse(forged), keys: [jwk], nonce: "n-1", now: now)
            }
        }
    }
}
