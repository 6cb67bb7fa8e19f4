import Crypto
import Foundation
import Testing

@testable import LatchkeyCore

@Suite("KeyEnvelope")
struct KeyEnvelopeTests {
    let kek = SymmetricKey(size: .bits256)
    let aad = KeyEnvelope.associatedData(tenant: "acme", kid: "k1")

    @Test func sealsAndOpens() throws {
        let envelope = try KeyEnvelope(keyEncryptionKey: kek)
        let secret = JOSETestKeys.es256.pkcs8DERRepresentation
        let sealed = try envelope.seal(secret, associatedData: aad)
        #expect(sealed.first == 1)
        #expect(sealed.count == secret.count + 5 + 12 + 16)
        #expect(sealed.range(of: secret) == nil)
        #expect(try envelope.open(sealed, associatedData: aad) == secret)
        #expect(try envelope.seal(secret, associatedData: aad) != sealed)
        let restored = try SigningKey(algorithm: .es256, pkcs8DER: try envelope.open(sealed, associatedData: aad))
        #expect(restored.publicJWK() == JOSETestKeys.es256.publicJWK())
    }

    @Test func associatedDataMismatchFails() throws {
        let envelope = try KeyEnvelope(keyEncryptionKey: kek)
        let sealed = try envelope.seal(Data("private".utf8), associatedData: aad)
        #expect(throws: KeyEnvelope.Failure.authenticationFailed) {
            try envelope.open(sealed, associatedData: KeyEnvelope.associatedData(tenant: "other", kid: "k1"))
        }
        #expect(throws: KeyEnvelope.Failure.authenticationFailed) {
            try envelope.open(sealed, associatedData: KeyEnvelope.associatedData(tenant: "acme", kid: "k2"))
        }
        #expect(
            KeyEnvelope.associatedData(tenant: "ab", kid: "c") != KeyEnvelope.associatedData(tenant: "a", kid: "bc"))
    }

    @Test func everyTamperedByteFails() throws {
        let envelope = try KeyEnvelope(keyEncryptionKey: kek)
        let sealed = try envelope.seal(Data("private key bytes".utf8), associatedData: aad)
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(throws: KeyEnvelope.Failure.self) { try envelope.open(tampered, associatedData: aad) }
        }
        #expect(throws: KeyEnvelope.Failure.malformed) { try envelope.open(sealed.prefix(20), associatedData: aad) }
    }

    @Test func wrongKeyAndRotation() throws {
        let old = try KeyEnvelope(keyEncryptionKey: kek)
        let sealed = try old.seal(Data("k".utf8), associatedData: aad)
        let newKEK = SymmetricKey(size: .bits256)
        #expect(throws: KeyEnvelope.Failure.unknownKey) {
            try KeyEnvelope(keyEncryptionKey: newKEK).open(sealed, associatedData: aad)
        }
        let rotated = try KeyEnvelope(keyEncryptionKey: newKEK, previousKeys: [kek])
        #expect(try rotated.open(sealed, associatedData: aad) == Data("k".utf8))
        let resealed = try rotated.seal(Data("k".utf8), associatedData: aad)
        #expect(throws: KeyEnvelope.Failure.unknownKey) { try old.open(resealed, associatedData: aad) }
    }

    @Test func configurationKeysMustBe32Bytes() throws {
        let value = KeyMaterial.generateConfigurationValue()
        let fromConfig = try KeyEnvelope(configuration: value)
        let sealed = try fromConfig.seal(Data("x".utf8), associatedData: aad)
        let standardBase64 = try #require(Base64URL.decode(value)).base64EncodedString()
        #expect(try KeyEnvelope(configuration: standardBase64).open(sealed, associatedData: aad) == Data("x".utf8))
        #expect(throws: KeyEnvelope.Failure.invalidKey) {
            try KeyEnvelope(configuration: Base64URL.encode(SecureRandom.bytes(count: 16)))
        }
        #expect(throws: KeyEnvelope.Failure.invalidKey) {
            try KeyEnvelope(configuration: Base64URL.encode(SecureRandom.bytes(count: 64)))
        }
        #expect(throws: KeyEnvelope.Failure.invalidKey) {
            try KeyEnvelope(keyEncryptionKey: SymmetricKey(size: .bits128))
        }
    }
}
