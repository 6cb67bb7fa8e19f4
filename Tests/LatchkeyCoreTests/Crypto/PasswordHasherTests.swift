import Foundation
import Testing

@testable import LatchkeyCore

@Suite("PasswordHasher")
struct PasswordHasherTests {
    let hasher = PasswordHasher(parameters: .testing)

    @Test func hashAndVerify() throws {
        let encoded = try hasher.hash("correct horse battery staple")
        #expect(encoded.hasPrefix("scrypt$ln=4,r=8,p=1$"))
        #expect(encoded.split(separator: "$").count == 4)
        #expect(hasher.verify("correct horse battery staple", against: encoded))
        #expect(!hasher.verify("correct horse battery stapler", against: encoded))
        #expect(!hasher.verify("", against: encoded))
    }

    @Test func saltsAreRandomPerHash() throws {
        let first = try hasher.hash("pw-123456")
        let second = try hasher.hash("pw-123456")
        #expect(first != second)
        #expect(hasher.verify("pw-123456", against: first))
        #expect(hasher.verify("pw-123456", against: second))
    }

    @Test func knownAnswerFromRFC7914() throws {
        // RFC 7914 §12: scrypt(P="password", S="NaCl", N=1024, r=8, p=16, dkLen=64).
        let derived = try PasswordHasher.derive(
            "password", salt: Array("NaCl".utf8),
            parameters: .init(logN: 10, blockSize: 8, parallelism: 16), length: 64)
        let hex = derived.map { String(format: "%02x", $0) }.joined()
        #expect(
            hex
                == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        )
    }

    @Test func unicodeIsNormalised() throws {
        let encoded = try hasher.hash("caf\u{E9}")
        #expect(hasher.verify("cafe\u{301}", against: encoded))
    }

    @Test func emptyPasswordsAreRefused() {
        #expect(throws: PasswordHasher.Failure.emptyPassword) { try hasher.hash("") }
    }

    @Test(arguments: [
        "", "scrypt", "bcrypt$ln=4,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "scrypt$ln=40,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "scrypt$ln=4,r=64,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "scrypt$ln=4,r=8$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "scrypt$ln=4,r=8,p=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "scrypt$ln=4,r=8,p=1$AAAA=$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "scrypt$ln=4,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAA",
    ])
    func malformedEncodingsNeverVerify(_ encoded: String) {
        #expect(!hasher.verify("anything", against: encoded))
        #expect(hasher.needsRehash(encoded))
    }

    @Test func tamperedHashFails() throws {
        let encoded = try hasher.hash("secret-password")
        var parts = encoded.split(separator: "$").map(String.init)
        var hash = try #require(Base64URL.decode(parts[3]))
        hash[0] ^= 1
        parts[3] = Base64URL.encode(hash)
        #expect(!hasher.verify("secret-password", against: parts.joined(separator: "$")))
    }

    @Test func needsRehashWhenParametersChange() throws {
        let encoded = try hasher.hash("pw-abcdef")
        #expect(!hasher.needsRehash(encoded))
        let stronger = PasswordHasher(parameters: .init(logN: 5, blockSize: 8, parallelism: 1))
        #expect(stronger.needsRehash(encoded))
        #expect(stronger.verify("pw-abcdef", against: encoded))
        #expect(PasswordHasher(parameters: .testing, saltByteCount: 32).needsRehash(encoded))
    }
}
