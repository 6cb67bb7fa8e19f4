import Foundation
import Testing

@testable import LatchkeyCore

@Suite("JWSAlgorithm")
struct JWSAlgorithmTests {
    @Test(arguments: [
        "none", "None", "NONE", "HS256", "HS384", "HS512", "es256", "Es256", "ES512", "RS384", "PS512",
        "eddsa", "EDDSA", "Ed25519", "", " ES256",
    ])
    func refusesEverythingElse(_ value: String) {
        #expect(JWSAlgorithm(parsing: value) == nil)
    }

    @Test func parsesExactNames() {
        for algorithm in JWSAlgorithm.allCases {
            #expect(JWSAlgorithm(parsing: algorithm.rawValue) == algorithm)
        }
    }

    @Test func matchesOnlyItsKeyType() {
        let jwks: [JWSAlgorithm: JWK] = [
            .es256: JOSETestKeys.es256.bareJWK, .es384: JOSETestKeys.es384.bareJWK,
            .rs256: JOSETestKeys.rs256.bareJWK, .ps256: JOSETestKeys.rs256.bareJWK, .edDSA: JOSETestKeys.edDSA.bareJWK,
        ]
        for algorithm in JWSAlgorithm.allCases {
            for (keyAlgorithm, jwk) in jwks {
                let compatible =
                    algorithm == keyAlgorithm || (algorithm.requiredKeyType.kty == "RSA" && jwk.kty == "RSA")
                #expect(algorithm.matches(jwk) == compatible, "\(algorithm) vs key for \(keyAlgorithm)")
            }
        }
    }

    @Test func honoursDeclaredAlgAndUse() {
        var jwk = JOSETestKeys.rs256.bareJWK
        jwk.alg = "RS256"
        #expect(JWSAlgorithm.rs256.matches(jwk))
        #expect(!JWSAlgorithm.ps256.matches(jwk))
        jwk.alg = nil
        jwk.use = "enc"
        #expect(!JWSAlgorithm.rs256.matches(jwk))
    }
}
