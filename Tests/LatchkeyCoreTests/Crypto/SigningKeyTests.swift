import Foundation
import Testing

@testable import LatchkeyCore

@Suite("SigningKey")
struct SigningKeyTests {
    @Test(arguments: JWSAlgorithm.allCases)
    func pkcs8ExportImportKeepsTheKey(_ algorithm: JWSAlgorithm) throws {
        let key = JOSETestKeys.key(for: algorithm)
        let der = key.pkcs8DERRepresentation
        #expect(der.first == 0x30)
        let imported = try SigningKey(algorithm: algorithm, pkcs8DER: der)
        #expect(imported.publicJWK(kid: "x") == key.publicJWK(kid: "x"))
        let signature = try imported.sign(Data("hello".utf8))
        #expect(key.publicKey.isValidSignature(signature, for: Data("hello".utf8), algorithm: algorithm))
    }

    @Test func importRefusesOtherKeyTypes() {
        #expect(throws: JOSEError.self) {
            try SigningKey(algorithm: .es384, pkcs8DER: JOSETestKeys.es256.pkcs8DERRepresentation)
        }
        #expect(throws: JOSEError.self) {
            try SigningKey(algorithm: .edDSA, pkcs8DER: JOSETestKeys.es256.pkcs8DERRepresentation)
        }
        #expect(throws: JOSEError.self) {
            try SigningKey(algorithm: .rs256, pkcs8DER: JOSETestKeys.edDSA.pkcs8DERRepresentation)
        }
        #expect(throws: JOSEError.self) { try SigningKey(algorithm: .es256, pkcs8DER: Data([0x30, 0x00])) }
    }

    @Test func ed25519UsesRFC8410Encoding() {
        let der = JOSETestKeys.edDSA.pkcs8DERRepresentation
        #expect(der.count == 48)
        #expect(
            Array(der.prefix(16)) == [
                0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
            ])
    }

    @Test func rsaGenerationRefusesWeakSizes() {
        #expect(throws: JOSEError.self) { try SigningKey.generate(.rs256, rsaBits: 1024) }
    }

    @Test func publicJWKHasNoPrivateMaterial() throws {
        for algorithm in JWSAlgorithm.allCases {
            let jwk = JOSETestKeys.key(for: algorithm).publicJWK(kid: "key-1")
            let json = String(decoding: try JSONEncoder().encode(jwk), as: UTF8.self)
            for member in JWK.privateMemberKeys { #expect(!json.contains("\"\(member)\"")) }
            #expect(!jwk.hasPrivateMembers)
        }
    }

    @Test func signaturesHaveJWSLengths() throws {
        #expect(try JOSETestKeys.es256.sign(Data()).count == 64)
        #expect(try JOSETestKeys.es384.sign(Data()).count == 96)
        #expect(try JOSETestKeys.edDSA.sign(Data()).count == 64)
        #expect(try JOSETestKeys.rs256.sign(Data()).count == 256)
        #expect(try JOSETestKeys.ps256.sign(Data()).count == 256)
    }
}
