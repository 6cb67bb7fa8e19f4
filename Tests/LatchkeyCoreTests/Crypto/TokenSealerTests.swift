import Crypto
import Foundation
import Testing

@testable import LatchkeyCore

@Suite("TokenSealer and SealedFields")
struct TokenSealerTests {
    private let sealer = TokenSealer(key: SymmetricKey(size: .bits256))
    private let state: [UInt8] = Array("user 42, scope openid api".utf8)
    private let associated: [UInt8] = Array("tenant|client|https://app.example/cb".utf8)

    @Test func aSealedStateOpensWithItsAssociatedDataOnly() throws {
        let token = try sealer.seal(state, associatedData: associated)
        #expect(sealer.open(token, associatedData: associated) == state)
        #expect(sealer.open(token, associatedData: associated + [0]) == nil)
        #expect(sealer.open(token, associatedData: []) == nil)
        #expect(TokenSealer(key: SymmetricKey(size: .bits256)).open(token, associatedData: associated) == nil)
        // The state is not readable in the token.
        let bytes = try #require(Base64URL.decodeBytes(Array(token.utf8)))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("scope"))
    }

    @Test func everyAlteredByteIsRefused() throws {
        let token = try sealer.seal(state, associatedData: associated)
        let bytes = try #require(Base64URL.decodeBytes(Array(token.utf8)))
        for index in bytes.indices {
            var altered = bytes
            altered[index] ^= 0x01
            #expect(sealer.open(Base64URL.encode(altered), associatedData: associated) == nil, "byte \(index)")
        }
        #expect(sealer.open(Base64URL.encode(bytes.dropLast()), associatedData: associated) == nil)
        #expect(sealer.open("", associatedData: associated) == nil)
        #expect(sealer.open("not base64url!", associatedData: associated) == nil)
        #expect(sealer.open(SecretTokens.generate(), associatedData: associated) == nil)
        #expect(sealer.open(String(repeating: "A", count: 5000), associatedData: associated) == nil)
    }

    @Test func randomSaltsMakeEveryTokenDifferent() throws {
        let tokens = try Set((0..<100).map { _ in try sealer.seal(state, associatedData: associated) })
        #expect(tokens.count == 100)
    }

    @Test func aDerivedTokenIsReproducibleAndDependsOnItsInputAndState() throws {
        let parent = Array("the previous token".utf8)
        let first = try sealer.seal(state, associatedData: associated, derivedFrom: parent)
        #expect(try sealer.seal(state, associatedData: associated, derivedFrom: parent) == first)
        #expect(sealer.open(first, associatedData: associated) == state)
        #expect(try sealer.seal(state, associatedData: associated, derivedFrom: parent + [1]) != first)
        // Another state from the same input gets another salt, hence another key: never one key for two states.
        let other = try sealer.seal(state + [1], associatedData: associated, derivedFrom: parent)
        let salt = { (token: String) in Base64URL.decodeBytes(Array(token.utf8)).map { Array($0[1..<33]) } }
        #expect(salt(other) != salt(first))
    }

    @Test func fieldsReadBackInOrder() throws {
        var fields = SealedFields()
        let id = UUID()
        fields.append(UInt8(7))
        fields.append(Int64(-2))
        fields.append(Int64(1_767_225_600))
        fields.append(id)
        fields.append("é scope")
        fields.append(nil)
        fields.append("")
        let tooLong = fields.append(String(repeating: "x", count: 70_000))
        #expect(!tooLong)
        var reader = SealedFieldsReader(fields.bytes)
        let small = reader.uint8()
        let negative = reader.int64()
        let time = reader.int64()
        let uuid = reader.uuid()
        let text = reader.string()
        let absent = reader.string()
        let empty = reader.string()
        #expect(small == 7 && negative == -2 && time == 1_767_225_600 && uuid == id)
        #expect(text == .some("é scope") && absent == .some(nil) && empty == .some(""))
        #expect(reader.isAtEnd)
        let beyond = reader.uint8()
        #expect(beyond == nil)
        var short = SealedFieldsReader(Array(fields.bytes.prefix(12)))
        let first = short.uint8()
        let second = short.int64()
        let truncated = short.int64()
        #expect(first == 7 && second == -2 && truncated == nil)
        var joined = SealedFields()
        joined.append("a")
        joined.append("bc")
        #expect(SealedFields(strings: ["a", "bc"])?.bytes == joined.bytes)
        #expect(SealedFields(strings: ["a", String(repeating: "x", count: 70_000)]) == nil)
        var invalidUTF8 = SealedFieldsReader([0, 2, 0xC3, 0x28])
        let invalid = invalidUTF8.string()
        #expect(invalid == nil)
    }
}
