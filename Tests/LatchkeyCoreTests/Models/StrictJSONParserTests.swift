import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct StrictJSONParserTests {
    @Test func parsesEveryJSONValueKind() throws {
        let value = try StrictJSONParser.parse(
            #" {"a": [1, -2.5e3, 0, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} "#)
        #expect(
            value == [
                "a": [1, -2500, 0, true, false, nil],
                "s": .string("x\"\\/\u{8}\u{c}\n\r\té😀"),
                "o": [:],
            ])
        #expect(try StrictJSONParser.parse("\"plain\"") == "plain")
        #expect(try StrictJSONParser.parse("[]") == [])
    }

    @Test func agreesWithFoundationOnWellFormedDocuments() throws {
        let documents = [
            #"{"specversion":"1.0","data":{"n":12345678901234,"f":0.1,"neg":-0.0,"e":1E-7,"list":[{"x":[]}]}}"#,
            #"["ünïcødé", "\u0041\u030a", 1e308, -1e-308]"#,
        ]
        for document in documents {
            let mine = try StrictJSONParser.parse(document)
            let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8))
            #expect(mine == foundation, "\(document)")
        }
    }

    @Test func wholeNumbersOfEveryLengthMatchTheirDecimalConversion() throws {
        var generator = SystemRandomNumberGenerator()
        var texts = [
            "0", "-0", "9", "-1", "999999999999999", "-999999999999999", "1000000000000000", "9007199254740993",
        ]
        for length in 1...20 {
            for _ in 0..<20 {
                let digits = (0..<length).map { index in
                    String(Int.random(in: (index == 0 && length > 1 ? 1 : 0)...9, using: &generator))
                }
                texts.append(digits.joined())
                texts.append("-" + digits.joined())
            }
        }
        for text in texts {
            let parsed = try StrictJSONParser.parse(text)
            guard case .number(let value) = parsed, let expected = Double(text) else {
                Issue.record("\(text) did not parse as a number")
                continue
            }
            #expect(value == expected && value.sign == expected.sign, "\(text)")
        }
    }

    @Test func refusesWhatFoundationWouldResolveSilentlyOrAcceptLoosely() {
        let refused = [
            "", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "'x'", "01", "1.", ".5", "-", "1e", "+1",
            "NaN", "Infinity", "1e400", "tru", "nul", "[1] [2]", "{\"a\":1}x",
            #"{"a":1,"a":2}"#,  // duplicate member
            #""\ud800""#, #""\udc00x""#, #""\ud800\u0041""#,  // unpaired surrogates
            "\"tab\there\"", "\"\u{1}\"",  // unescaped control characters
            #""\x41""#, #""\u12""#,
            String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
        ]
        for document in refused {
            #expect(throws: StrictJSONParser.Failure.self, "\(document.debugDescription)") {
                try StrictJSONParser.parse(document)
            }
        }
        #expect(throws: StrictJSONParser.Failure.self) { try StrictJSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: StrictJSONParser.Failure.self) { try StrictJSONParser.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func nestingUpToTheLimitIsFine() throws {
        let deep = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try StrictJSONParser.parse(deep)
    }

    @Test func reportsWhereParsingStopped() {
        do {
            _ = try StrictJSONParser.parse(#"{"a":1,"a":2}"#)
            Issue.record("duplicate members must fail")
        } catch {
            #expect(error.offset == 7)
            #expect(error.description.contains("duplicate member \"a\""))
        }
    }
}
