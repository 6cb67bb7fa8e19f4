import Foundation
import Testing

@testable import LatchkeyCore

/// RFC 8785 (JCS) behaviour, with the RFC's own examples.
@Suite struct CanonicalJSONTests {
    @Test(arguments: [
        // RFC 8785 Appendix B / ECMAScript Number::toString.
        (0.0, "0"), (-0.0, "0"), (1.0, "1"), (-1.5, "-1.5"), (4.50, "4.5"), (2e-3, "0.002"),
        (0.000001, "0.000001"), (0.0000001, "1e-7"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
        (333333333.33333329, "333333333.3333333"), (1e30, "1e+30"), (1e-27, "1e-27"),
        (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9007199254740992.0, "9007199254740992"), (295147905179352830000.0, "295147905179352830000"),
        (123e-20, "1.23e-18"), (-1.2345678e-8, "-1.2345678e-8"), (12.5e6, "12500000"),
    ])
    func formatsNumbersLikeECMAScript(number: Double, expected: String) {
        #expect(CanonicalJSON.formatNumber(number) == expected)
    }

    @Test func sortsMembersByUTF16CodeUnitsAndEscapesLikeJSONStringify() throws {
        // RFC 8785 §3.2.3 sorting example.
        let input = try StrictJSONParser.parse(
            #"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#
        )
        let keys = String(decoding: CanonicalJSON.encode(input), as: UTF8.self)
        let order = ["\\r", "1", "\u{80}", "ö", "€", "😀", "\u{FB33}"].map { "\"\($0)\":" }
        var position = keys.startIndex
        for key in order {
            let found = try #require(
                keys.range(of: key, range: position..<keys.endIndex), "\(key) out of order in \(keys)")
            position = found.upperBound
        }
        let escaped = CanonicalJSON.encode(.string("\u{1}\u{1f}\"\\/\u{7f}\u{2028}é\n\t\u{8}\u{c}"))
        #expect(String(decoding: escaped, as: UTF8.self) == "\"\\u0001\\u001f\\\"\\\\/\u{7f}\u{2028}é\\n\\t\\b\\f\"")
    }

    @Test func canonicalFormIsAFixedPointThroughParsing() throws {
        let documents = [
            #"{ "b" : [ 1.0 , 2.50, -0, 1E3 ], "a" : { "z": null, "y": "\u00e9" }, "c": 0.1 }"#,
            #"[123456789012345678901234567890, 1e-9, "x\u0000y"]"#,
        ]
        for document in documents {
            let once = CanonicalJSON.encode(try StrictJSONParser.parse(document))
            let twice = CanonicalJSON.encode(try StrictJSONParser.parse(once))
            #expect(once == twice)
        }
        #expect(
            String(decoding: CanonicalJSON.encode(try StrictJSONParser.parse(documents[0])), as: UTF8.self)
                == #"{"a":{"y":"é","z":null},"b":[1,2.5,0,1000],"c":0.1}"#)
    }

    @Test func memberOrderIsUTF16OrderForEveryKindOfCharacter() {
        let pieces = [
            "a", "Z", "é", "€", "\u{FB33}", "\u{FFFD}", "\u{E000}", "😀", "𝄞", "\u{10FFFF}", "\u{7F}", "\u{80}", "",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let lhs = (0..<Int.random(in: 0...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)!
            }.joined()
            let rhs = (0..<Int.random(in: 0...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)!
            }.joined()
            #expect(
                CanonicalJSON.precedes(lhs, rhs) == lhs.utf16.lexicographicallyPrecedes(rhs.utf16), "\(lhs) vs \(rhs)")
        }
    }
}
