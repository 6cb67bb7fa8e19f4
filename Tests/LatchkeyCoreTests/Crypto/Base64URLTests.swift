import Foundation
import Testing

@testable import LatchkeyCore

@Suite("Base64URL")
struct Base64URLTests {
    @Test func roundTripsAllLengths() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(Base64URL.decode(encoded) == Data(bytes))
        }
    }

    @Test func matchesFoundationAlphabetMapping() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x10]
        let standard = Data(bytes).base64EncodedString()
        let expected = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(Base64URL.encode(bytes) == expected)
    }

    @Test(arguments: ["QQ==", "QQ=", "a+b/", "ab c", "ab\n", "abcde", "ab.c", "é", "ab*c"])
    func rejectsNonStrictInput(_ input: String) {
        #expect(Base64URL.decode(input) == nil)
    }

    @Test func rejectsNonCanonicalTrailingBits() {
        #expect(Base64URL.decode("QQ") == Data([0x41]))
        #expect(Base64URL.decode("QR") == nil)
        #expect(Base64URL.decode("QUE") == Data([0x41, 0x41]))
        #expect(Base64URL.decode("QUF") == nil)
    }

    @Test func emptyStringIsEmptyData() {
        #expect(Base64URL.decode("") == Data())
        #expect(Base64URL.encode([UInt8]()) == "")
    }
}
