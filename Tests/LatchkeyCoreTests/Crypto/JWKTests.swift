import Crypto
import Foundation
import Testing
import _CryptoExtras

@testable import LatchkeyCore

@Suite("JWK")
struct JWKTests {
    @Test func detectsAndNeverEmitsPrivateMembers() throws {
        let json = #"{"kty":"EC","crv":"P-256","x":"eA","y":"eQ","d":"secret","kid":"k1"}"#
        let jwk = try JSONDecoder().decode(JWK.self, from: Data(json.utf8))
        #expect(jwk.hasPrivateMembers)
        #expect(jwk.privateMemberNames == ["d"])
        #expect(!jwk.publicJWK.hasPrivateMembers)
        let encoded = String(decoding: try JSONEncoder().encode(jwk), as: UTF8.self)
        #expect(!encoded.contains("secret"))
        #expect(!encoded.contains("\"d\""))
        #expect(encoded.contains("\"kid\":\"k1\""))
    }

    @Test(arguments: JWK.privateMemberKeys)
    func everyPrivateMemberIsDetected(_ member: String) throws {
        let json = #"{"kty":"RSA","n":"AQAB","e":"AQAB","\#(member)":null}"#
        let jwk = try JSONDecoder().decode(JWK.self, from: Data(json.utf8))
        #expect(jwk.privateMemberNames == [member])
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: jwk) }
    }

    @Test func rejectsWrongMemberTypes() {
        let json = #"{"kty":"EC","crv":"P-256","x":1,"y":"eQ"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(JWK.self, from: Data(json.utf8)) }
    }

    @Test func rfc7638ExampleThumbprint() throws {
        let n =
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        let jwk = JWK(kty: "RSA", n: n, e: "AQAB", kid: "2011-04-29", alg: "RS256")
        #expect(try jwk.thumbprint() == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        #expect(try JWKThumbprint.canonicalJSON(jwk) == #"{"e":"AQAB","kty":"RSA","n":"\#(n)"}"#)
    }

    @Test func thumbprintIgnoresOptionalMembersAndNeedsRequiredOnes() throws {
        let base = JOSETestKeys.es256.bareJWK
        var decorated = base
        decorated.kid = "abc"
        decorated.use = "sig"
        decorated.alg = "ES256"
        #expect(try base.thumbprint() == decorated.thumbprint())
        #expect(try JWKThumbprint.canonicalJSON(base).hasPrefix(#"{"crv":"P-256","kty":"EC","x":""#))
        #expect(throws: JOSEError.self) { try JWK(kty: "EC", crv: "P-256", x: "eA").thumbprint() }
        #expect(throws: JOSEError.self) { try JWK(kty: "oct").thumbprint() }
        #expect(
            try JWKThumbprint.canonicalJSON(JWK(kty: "OKP", crv: "Ed25519", x: "a\"b"))
                == #"{"crv":"Ed25519","kty":"OKP","x":"a\"b"}"#)
    }

    @Test func publicKeyRoundTripsThroughJWKForEveryKeyType() throws {
        for algorithm in JWSAlgorithm.allCases {
            let key = JOSETestKeys.key(for: algorithm)
            let jwk = key.publicJWK(kid: "kid-1")
            #expect(jwk.kid == "kid-1")
            #expect(jwk.use == "sig")
            #expect(jwk.alg == algorithm.rawValue)
            #expect(algorithm.matches(jwk))
            let rebuilt = try JWSPublicKey(jwk: jwk)
            #expect(rebuilt.jwk() == key.bareJWK)
            #expect(rebuilt.thumbprint == (try jwk.thumbprint()))
            #expect(key.publicKey.thumbprint == (try key.bareJWK.thumbprint()))
        }
    }

    @Test func rejectsOffCurvePoint() throws {
        var jwk = JOSETestKeys.es256.bareJWK
        var y = try #require(Base64URL.decode(jwk.y!))
        y[y.count - 1] ^= 0x01
        jwk.y = Base64URL.encode(y)
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: jwk) }
    }

    @Test func rejectsWrongCoordinateLengths() throws {
        var short = JOSETestKeys.es256.bareJWK
        short.x = Base64URL.encode(try #require(Base64URL.decode(short.x!)).dropFirst())
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: short) }

        var padded = JOSETestKeys.es256.bareJWK
        padded.x = Base64URL.encode([0] + Array(try #require(Base64URL.decode(padded.x!))))
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: padded) }

        var mislabelled = JOSETestKeys.es384.bareJWK
        mislabelled.crv = "P-256"
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: mislabelled) }

        var ed = JOSETestKeys.edDSA.bareJWK
        ed.x = Base64URL.encode(try #require(Base64URL.decode(ed.x!)).dropLast())
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: ed) }
    }

    @Test func rejectsSmallAndPaddedRSAModuli() throws {
        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let primitives = try weak.publicKey.getKeyPrimitives()
        let weakJWK = JWK(kty: "RSA", n: Base64URL.encode(primitives.modulus.drop(while: { $0 == 0 })), e: "AQAB")
        #expect(throws: JOSEError.invalidKey("RSA modulus of 1024 bits is below 2048")) {
            try JWSPublicKey(jwk: weakJWK)
        }

        var padded = JOSETestKeys.rs256.bareJWK
        padded.n = Base64URL.encode([0] + Array(try #require(Base64URL.decode(padded.n!))))
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: padded) }
    }

    @Test func rejectsUnsupportedKeyTypes() {
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: JWK(kty: "oct")) }
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: JWK(kty: "EC", crv: "P-521", x: "AA", y: "AA")) }
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: JWK(kty: "OKP", crv: "X25519", x: "AA")) }
    }

    @Test func jwkSetFindsUniqueKid() throws {
        let set = JWKSet(keys: [
            JOSETestKeys.es256.publicJWK(kid: "a"), JOSETestKeys.edDSA.publicJWK(kid: "b"),
            JOSETestKeys.es384.publicJWK(kid: "b"),
        ])
        #expect(set.key(withID: "a")?.crv == "P-256")
        #expect(set.key(withID: "b") == nil)
        let decoded = try JSONDecoder().decode(JWKSet.self, from: JSONEncoder().encode(set))
        #expect(decoded == set)
    }
}
