import Crypto
import Foundation
import Testing

@testable import LatchkeyCore

@Suite("SecretTokens and KeyedHasher")
struct SecretTokensTests {
    @Test func tokensAreLongRandomAndPrefixed() {
        let token = SecretTokens.generate(prefix: "lk_rt_")
        #expect(token.hasPrefix("lk_rt_"))
        let body = String(token.dropFirst(6))
        #expect(Base64URL.decode(body)?.count == 32)
        let many = Set((0..<200).map { _ in SecretTokens.generate() })
        #expect(many.count == 200)
        #expect(Base64URL.decode(SecretTokens.generate(byteCount: 48))?.count == 48)
    }

    @Test func keyedHashIsDeterministicPerKey() throws {
        let hasher = try KeyedHasher(key: SymmetricKey(size: .bits256))
        let other = try KeyedHasher(key: SymmetricKey(size: .bits256))
        let secret = SecretTokens.generate()
        let stored = hasher.hash(secret)
        #expect(Base64URL.decode(stored)?.count == 32)
        #expect(hasher.hash(secret) == stored)
        #expect(hasher.matches(secret, storedHash: stored))
        #expect(!hasher.matches(secret + "x", storedHash: stored))
        #expect(hasher.hash(secret) == stored, "an earlier hash changed the next one")
        #expect(!other.matches(secret, storedHash: stored))
        #expect(!hasher.matches(secret, storedHash: ""))
    }

    @Test func keyedHashKnownAnswer() throws {
        // RFC 4231 test case 2 uses a short key; here a 32-byte key of 0x0b with HMAC-SHA256("Hi There").
        let hasher = try KeyedHasher(key: SymmetricKey(data: Data(repeating: 0x0b, count: 32)))
        let expected = HMAC<SHA256>.authenticationCode(
            for: Data("Hi There".utf8), using: SymmetricKey(data: Data(repeating: 0x0b, count: 32)))
        #expect(hasher.hash("Hi There") == Base64URL.encode(expected))
        let empty = HMAC<SHA256>.authenticationCode(
            for: Data(), using: SymmetricKey(data: Data(repeating: 0x0b, count: 32)))
        #expect(hasher.hash("") == Base64URL.encode(empty))
    }

    @Test func keysComeFromConfiguration() throws {
        let value = KeyMaterial.generateConfigurationValue()
        let hasher = try KeyedHasher(configuration: value)
        let standard = try #require(Base64URL.decode(value)).base64EncodedString()
        let same = try KeyedHasher(configuration: "  \(standard)\n")
        #expect(hasher.hash("s") == same.hash("s"))
        #expect(throws: KeyMaterial.Failure.tooShort(minimumBytes: 32)) {
            try KeyedHasher(configuration: Base64URL.encode(SecureRandom.bytes(count: 16)))
        }
        #expect(throws: KeyMaterial.Failure.notBase64) { try KeyedHasher(configuration: "not base64 !!") }
        #expect(throws: KeyMaterial.Failure.self) { try KeyedHasher(key: SymmetricKey(size: .bits128)) }
    }
}
