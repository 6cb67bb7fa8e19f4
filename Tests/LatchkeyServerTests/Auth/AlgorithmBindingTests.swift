import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore
@testable import LatchkeyServer

/// Our own tokens verify with ES256, RS256 and EdDSA keys, each key only with the algorithm it declares.
@Suite struct AlgorithmBindingTests {
    let now = Int64(Date().timeIntervalSince1970)

    func verify(_ token: String, keys: [JWK]) async throws(AccessTokenError) -> VerifiedAccessToken {
        let verifier = try! AccessTokenVerifier(
            configuration: .init(issuers: [TokenMinter.issuer], audiences: [TokenMinter.audience]),
            keySource: InMemoryKeySource(keys))
        return try await verifier.verify(token)
    }

    @Test(arguments: TenantPolicy.signingAlgorithms)
    func everyTenantAlgorithmVerifiesAndForgeriesAgainstItsKeyFail(algorithm: JWSAlgorithm) async throws {
        let minter = try TokenMinter(algorithm: algorithm)
        let token = try minter.token(now: now)
        #expect(try await verify(token, keys: [minter.jwk]).clientID == "client-1")
        #expect(try CompactJWS(parsing: token).header.alg == algorithm.rawValue)

        let payload = try CompactJWS(parsing: token).payload
        let forgeries = try AlgorithmConfusion.forgeries(against: minter.jwk, payload: payload)
        #expect(forgeries.count >= 6)
        for (name, forged) in forgeries {
            await #expect(throws: AccessTokenError.self, "\(name)") { try await verify(forged, keys: [minter.jwk]) }
        }
    }

    @Test func aKeyOfAnotherTypeIsAMismatchNotJustABadSignature() throws {
        let keys = try TenantPolicy.signingAlgorithms.map { try SigningKey.generate($0) }
        for key in keys {
            let jwk = key.publicJWK(kid: "k")
            for other in keys where other.algorithm != key.algorithm {
                let token = try CompactJWS.sign(
                    payload: Data("{}".utf8), using: other, header: JWSHeaderParameters(kid: "k"))
                let error = try #require(throws: JOSEError.self) {
                    try CompactJWS(parsing: token).verify(
                        using: jwk, allowedAlgorithms: Set(JWSAlgorithm.allCases), requireDeclaredAlgorithm: true)
                }
                guard case .keyAlgorithmMismatch = error else {
                    Issue.record("\(other.algorithm) with a \(key.algorithm) key: \(String(describing: error))")
                    continue
                }
            }
        }
    }

    @Test func aValidSignatureUnderAnotherAlgorithmOfTheSameKeyIsRefused() async throws {
        // The tenant's RSA key declared RS256 must not verify PS256, even though the signature is genuine.
        let minter = try TokenMinter(algorithm: .rs256)
        let pss = try SigningKey(algorithm: .ps256, pkcs8DER: minter.key.pkcs8DERRepresentation)
        let payload = try CompactJWS(parsing: try minter.token(now: now)).payload
        let token = try CompactJWS.sign(
            payload: payload, using: pss, header: JWSHeaderParameters(typ: "at+jwt", kid: minter.kid))
        await #expect(throws: AccessTokenError.self) { try await verify(token, keys: [minter.jwk]) }
        // The same token verifies with the key declared for PS256: the refusal above is the binding.
        var declaredPS256 = minter.jwk
        declaredPS256.alg = "PS256"
        #expect(try await verify(token, keys: [declaredPS256]).subject == "user-1")
    }

    @Test func keysWithoutADeclaredAlgorithmDoNotVerifyOurTokens() async throws {
        let minter = try TokenMinter(algorithm: .edDSA)
        var bare = minter.jwk
        bare.alg = nil
        await #expect(throws: AccessTokenError.self) { try await verify(try minter.token(now: now), keys: [bare]) }
    }

    @Test func rsaModuliOutsideTheSizeBoundsAreRefused() throws {
        func rsaJWK(modulusBytes: Int) -> JWK {
            var modulus = [UInt8](repeating: 0xC5, count: modulusBytes)
            modulus[modulusBytes - 1] = 0x01
            return JWK(kty: "RSA", n: Base64URL.encode(modulus), e: "AQAB", kid: "rsa", use: "sig", alg: "RS256")
        }
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: rsaJWK(modulusBytes: 128)) }  // 1024 bits
        #expect(throws: JOSEError.self) { try JWSPublicKey(jwk: rsaJWK(modulusBytes: 1100)) }  // 8800 bits
        #expect(throws: Never.self) { try JWSPublicKey(jwk: rsaJWK(modulusBytes: 256)) }
    }

    @Test func theJWKSCacheKeepsOnlyKeysThatCanVerify() throws {
        let good = try TenantPolicy.signingAlgorithms.enumerated().map { index, algorithm in
            try SigningKey.generate(algorithm).publicJWK(kid: "good-\(index)")
        }
        var noAlg = good[0]
        noAlg.alg = nil
        noAlg.kid = "no-alg"
        var encryption = good[1]
        encryption.use = "enc"
        encryption.kid = "enc"
        var wrongAlg = good[2]
        wrongAlg.alg = "ES256"
        wrongAlg.kid = "wrong-alg"
        let symmetric = JWK(kty: "oct", kid: "hmac", alg: "HS256")
        let small = JWK(
            kty: "RSA", n: Base64URL.encode([UInt8](repeating: 0xC5, count: 128)), e: "AQAB", kid: "small", alg: "RS256"
        )
        let withPrivate = try JSONDecoder().decode(
            JWK.self,
            from: Data(
                #"{"kty":"OKP","crv":"Ed25519","x":"\#(good[2].x!)","d":"AAAA","kid":"private","alg":"EdDSA"}"#.utf8))
        let set = JWKSet(keys: good + [noAlg, encryption, wrongAlg, symmetric, small, withPrivate])
        #expect(JWKSCache.verificationKeys(in: set).keys.compactMap(\.kid) == ["good-0", "good-1", "good-2"])
        let many = JWKSet(
            keys: (0..<40).map { index in
                var key = good[0]
                key.kid = "k\(index)"
                return key
            })
        #expect(JWKSCache.verificationKeys(in: many).keys.count == JWKSCache.maximumKeys)
    }
}
