import Crypto
import Foundation
import Testing

@testable import LatchkeyCore

@Suite("CompactJWS")
struct CompactJWSTests {
    struct Claims: Codable, Equatable {
        let sub: String
        let iat: Int64
    }

    let all = Set(JWSAlgorithm.allCases)

    @Test(arguments: JWSAlgorithm.allCases)
    func signAndVerifyRoundTrip(_ algorithm: JWSAlgorithm) throws {
        let key = JOSETestKeys.key(for: algorithm)
        let token = try CompactJWS.sign(
            claims: Claims(sub: "alice", iat: 1), using: key,
            header: JWSHeaderParameters(typ: "at+jwt", kid: "k1"))
        let jws = try CompactJWS(parsing: token)
        #expect(jws.header.alg == algorithm.rawValue)
        #expect(jws.header.typ == "at+jwt")
        #expect(jws.header.kid == "k1")
        #expect(jws.signingInput == Data(token.split(separator: ".")[0...1].joined(separator: ".").utf8))
        #expect(try jws.verify(using: key.publicKey, allowedAlgorithms: all) == algorithm)
        #expect(try jws.verify(using: key.publicJWK(kid: "k1"), allowedAlgorithms: [algorithm]) == algorithm)
        #expect(try jws.claims(as: Claims.self) == Claims(sub: "alice", iat: 1))
        #expect(try jws.payloadObject()["sub"] as? String == "alice")
        if let length = algorithm.fixedSignatureLength { #expect(jws.signature.count == length) }
    }

    @Test(arguments: JWSAlgorithm.allCases)
    func tamperedPayloadFails(_ algorithm: JWSAlgorithm) throws {
        let key = JOSETestKeys.key(for: algorithm)
        let token = try CompactJWS.sign(claims: Claims(sub: "alice", iat: 1), using: key)
        let forged = replacingSegment(1, of: token, with: b64(#"{"sub":"mallory","iat":1}"#))
        let jws = try CompactJWS(parsing: forged)
        #expect(throws: JOSEError.invalidSignature("signature does not verify")) {
            try jws.verify(using: key.publicKey, allowedAlgorithms: all)
        }
    }

    @Test func tamperedSignatureAndWrongKeyFail() throws {
        let token = try CompactJWS.sign(claims: Claims(sub: "a", iat: 1), using: JOSETestKeys.es256)
        var signature = try #require(Base64URL.decode(String(token.split(separator: ".")[2])))
        signature[10] ^= 0x40
        let tampered = try CompactJWS(parsing: replacingSegment(2, of: token, with: Base64URL.encode(signature)))
        #expect(throws: JOSEError.self) {
            try tampered.verify(using: JOSETestKeys.es256.publicKey, allowedAlgorithms: all)
        }
        let other = try SigningKey.generate(.es256)
        #expect(throws: JOSEError.self) {
            try CompactJWS(parsing: token).verify(using: other.publicKey, allowedAlgorithms: all)
        }
    }

    @Test func algorithmMustMatchKeyType() throws {
        // An ES256-signed token relabelled ES384 and checked with an ES256 key: alg/key mismatch.
        let token = try CompactJWS.sign(claims: Claims(sub: "a", iat: 1), using: JOSETestKeys.es256)
        let relabelled = replacingSegment(0, of: token, with: b64(#"{"alg":"ES384"}"#))
        #expect(throws: JOSEError.keyAlgorithmMismatch("key cannot verify ES384")) {
            try CompactJWS(parsing: relabelled).verify(using: JOSETestKeys.es256.publicKey, allowedAlgorithms: all)
        }
        // RS256 signature presented as PS256 with the same RSA key: padding differs, must fail.
        let rsa = try CompactJWS.sign(claims: Claims(sub: "a", iat: 1), using: JOSETestKeys.rs256)
        let asPSS = replacingSegment(0, of: rsa, with: b64(#"{"alg":"PS256"}"#))
        #expect(throws: JOSEError.self) {
            try CompactJWS(parsing: asPSS).verify(using: JOSETestKeys.rs256.publicKey, allowedAlgorithms: all)
        }
        // JWK path: an EdDSA JWK cannot verify ES256.
        #expect(throws: JOSEError.self) {
            try CompactJWS(parsing: token).verify(using: JOSETestKeys.edDSA.bareJWK, allowedAlgorithms: all)
        }
    }

    @Test func allowListIsEnforced() throws {
        let token = try CompactJWS.sign(claims: Claims(sub: "a", iat: 1), using: JOSETestKeys.rs256)
        #expect(throws: JOSEError.algorithmNotAllowed("alg RS256 is not allowed")) {
            try CompactJWS(parsing: token).verify(using: JOSETestKeys.rs256.publicKey, allowedAlgorithms: [.es256])
        }
    }

    @Test(arguments: ["none", "None", "HS256", "es256"])
    func unimplementedAlgorithmsAreRefused(_ alg: String) throws {
        let token = b64(#"{"alg":"\#(alg)"}"#) + "." + b64(#"{"sub":"a"}"#) + "."
        let jws = try CompactJWS(parsing: token)
        #expect(jws.header.algorithm == nil)
        #expect(throws: JOSEError.unsupportedAlgorithm("unsupported alg \(alg)")) {
            try jws.verify(using: JOSETestKeys.es256.publicKey, allowedAlgorithms: all)
        }
    }

    @Test func ecdsaSignaturesMustBeRawAndInRange() throws {
        let key = JOSETestKeys.es256
        let token = try CompactJWS.sign(claims: Claims(sub: "a", iat: 1), using: key)
        let jws = try CompactJWS(parsing: token)
        let der = try P256.Signing.ECDSASignature(rawRepresentation: jws.signature).derRepresentation
        let candidates: [Data] = [
            der,
            Data(count: 64),
            jws.signature.prefix(63),
            jws.signature + Data([0]),
            Data(ECDSARange.p256Order) + jws.signature.suffix(32),
            jws.signature.prefix(32) + Data(ECDSARange.p256Order),
        ]
        for candidate in candidates {
            let forged = try CompactJWS(parsing: replacingSegment(2, of: token, with: Base64URL.encode(candidate)))
            #expect(throws: JOSEError.self) { try forged.verify(using: key.publicKey, allowedAlgorithms: all) }
        }
        #expect(!ECDSARange.isInRange(Array(Data(count: 32) + jws.signature.suffix(32)), order: ECDSARange.p256Order))
        #expect(ECDSARange.isInRange(Array(jws.signature), order: ECDSARange.p256Order))

        let p384 = try CompactJWS(
            parsing: try CompactJWS.sign(claims: Claims(sub: "a", iat: 1), using: JOSETestKeys.es384))
        #expect(p384.signature.count == 96)
        #expect(
            !ECDSARange.isInRange(ECDSARange.p384Order + Array(p384.signature.suffix(48)), order: ECDSARange.p384Order))
    }

    @Test(arguments: [
        "a.b", "a.b.c.d", ".e30.", "", "...", "e30.e30.e30.e30", "e30.e30.",
        "e30=.e30.", "e30.e30=.", "e30.e30.AA==", "e3+.e30.", "W10.e30.", "bnVsbA.e30.", "eyJhbGciOjF9.e30.",
    ])
    func malformedStructureIsRefused(_ token: String) {
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token) }
    }

    @Test func lengthIsBounded() {
        let token = b64(#"{"alg":"ES256"}"#) + "." + String(repeating: "A", count: 2_000) + "."
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token, maximumLength: 1_000) }
    }

    @Test func payloadMustBeAnObjectForClaims() throws {
        for payload in ["[1,2,3]", "\"text\"", "not json", "42", ""] {
            let jws = try CompactJWS(parsing: b64(#"{"alg":"ES256"}"#) + "." + b64(payload) + ".")
            #expect(throws: JOSEError.self) { try jws.claims(as: [String: Int].self) }
            #expect(throws: JOSEError.self) { try jws.payloadObject() }
        }
    }

    /// Headers and payloads are read by the strict parser, like every JSON document from outside: what
    /// another reader could resolve differently (which duplicate wins, broken text, 1e400) is refused.
    @Test func headersAndPayloadsThatParsersCouldReadDifferentlyAreRefused() throws {
        for header in [
            #"{"alg":"ES256","alg":"none"}"#, #"{"alg":"ES256","typ":"JWT","typ":"dpop+jwt"}"#,
            #"{"alg":"ES256","kid":"\ud800"}"#, "{\"alg\":\"ES256\",\"kid\":\"a\tb\"}", #"{"alg":"ES256","x":1e400}"#,
            #"{"alg":"ES256","jwk":{"kty":"EC","kty":"oct"}}"#,
        ] {
            #expect(throws: JOSEError.self, "\(header)") {
                try CompactJWS(parsing: b64(header) + "." + b64("{}") + ".")
            }
        }
        let invalidUTF8 = Base64URL.encode(
            Data(#"{"alg":"ES256","kid":""#.utf8) + Data([0xC3, 0x28]) + Data(#""}"#.utf8))
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: invalidUTF8 + "." + b64("{}") + ".") }
        for payload in [
            #"{"sub":"alice","sub":"mallory","iat":1}"#, #"{"sub":"alice","iat":1,"x":-1e400}"#,
            #"{"sub":"\udc00","iat":1}"#,
        ] {
            let jws = try CompactJWS(parsing: b64(#"{"alg":"ES256"}"#) + "." + b64(payload) + ".")
            #expect(throws: JOSEError.self, "\(payload)") { try jws.claims(as: Claims.self) }
            #expect(throws: JOSEError.self, "\(payload)") { try jws.payloadObject() }
        }
        // Typed header parameters keep their rules: wrong types are refused, null means absent.
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: b64(#"{"alg":256}"#) + "." + b64("{}") + ".") }
        #expect(throws: JOSEError.self) {
            try CompactJWS(parsing: b64(#"{"alg":"ES256","jwk":{"kty":"EC","x":7}}"#) + "." + b64("{}") + ".")
        }
        let nulls = try CompactJWS(
            parsing: b64(#"{"alg":"ES256","typ":null,"kid":"k","jwk":{"kty":"EC","d":null}}"#) + "." + b64("{}") + ".")
        #expect(nulls.header.typ == nil && nulls.header.kid == "k")
        #expect(nulls.header.jwk?.hasPrivateMembers == true)
    }

    @Test func criticalHeadersFollowRFC7515() throws {
        let key = JOSETestKeys.es256
        let payload = #"{"sub":"a"}"#
        let unknown = try signRaw(
            header: #"{"alg":"ES256","crit":["exp-ext"],"exp-ext":1}"#, payload: payload, key: key)
        #expect(throws: JOSEError.unsupportedCriticalHeader("unsupported critical header parameter exp-ext")) {
            try CompactJWS(parsing: unknown)
        }
        let understood = try CompactJWS(parsing: unknown, understoodCriticalHeaders: ["exp-ext"])
        #expect(try understood.verify(using: key.publicKey, allowedAlgorithms: all) == .es256)
        #expect(try understood.header.jsonObject()["exp-ext"] as? Int == 1)

        let absent = try signRaw(header: #"{"alg":"ES256","crit":["exp-ext"]}"#, payload: payload, key: key)
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: absent, understoodCriticalHeaders: ["exp-ext"]) }
        for header in [
            #"{"alg":"ES256","crit":[]}"#, #"{"alg":"ES256","crit":["alg"]}"#, #"{"alg":"ES256","crit":"x"}"#,
            #"{"alg":"ES256","crit":["x","x"],"x":1}"#,
        ] {
            let token = try signRaw(header: header, payload: payload, key: key)
            #expect(throws: JOSEError.self) { try CompactJWS(parsing: token, understoodCriticalHeaders: ["x"]) }
        }
    }

    @Test func headerExposesEmbeddedJWKAndRawJSON() throws {
        let key = JOSETestKeys.edDSA
        let token = try CompactJWS.sign(
            payload: Data("{}".utf8), using: key,
            header: JWSHeaderParameters(typ: "dpop+jwt", jwk: key.bareJWK))
        let jws = try CompactJWS(parsing: token)
        #expect(jws.header.jwk == key.bareJWK)
        #expect(try jws.header.jsonObject()["typ"] as? String == "dpop+jwt")
        #expect(String(decoding: jws.header.rawJSON, as: UTF8.self).hasPrefix(#"{"alg":"EdDSA""#))
    }
}
