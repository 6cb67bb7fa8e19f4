import Foundation
import Testing

@testable import LatchkeyServer

/// The one reading of JSON request bodies: what it refuses, and that the typed values come from exactly
/// the document it accepted.
@Suite struct JSONRequestBodyTests {
    struct Tokens: Decodable, Equatable {
        var uses: Int?
        var description: String?
    }

    static func refusal(_ bytes: [UInt8]) -> JSONRequestBody.Problem? {
        do {
            _ = try JSONRequestBody(bytes)
            return nil
        } catch { return error }
    }

    @Test func refusesWhatAnotherParserCouldReadDifferently() {
        let cases: [(String, [UInt8])] = [
            ("duplicate", Array(#"{"uses":1,"uses":100000}"#.utf8)),
            ("nested duplicate", Array(#"{"policy":{"a":1,"a":2}}"#.utf8)),
            ("raw line feed", Array("{\"description\":\"a\nb\"}".utf8)),
            ("raw tab", Array("{\"description\":\"a\tb\"}".utf8)),
            ("raw NUL", [UInt8]("{\"d\":\"a".utf8) + [0] + [UInt8]("\"}".utf8)),
            ("invalid UTF-8", [UInt8]("{\"d\":\"".utf8) + [0xC3, 0x28] + [UInt8]("\"}".utf8)),
            ("overlong UTF-8", [UInt8]("{\"d\":\"".utf8) + [0xC0, 0xAF] + [UInt8]("\"}".utf8)),
            ("lone high surrogate", Array(#"{"d":"\ud800"}"#.utf8)),
            ("lone low surrogate", Array(#"{"d":"\udc00x"}"#.utf8)),
            ("number out of range", Array(#"{"uses":1e400}"#.utf8)),
            ("negative number out of range", Array(#"{"uses":-1e400}"#.utf8)),
            ("trailing data", Array(#"{"uses":1} {"uses":2}"#.utf8)),
            ("trailing comma", Array(#"{"uses":1,}"#.utf8)),
            (
                "too deep",
                Array(("{\"a\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}").utf8)
            ),
        ]
        for (what, bytes) in cases {
            guard case .malformed? = Self.refusal(bytes) else {
                Issue.record("\(what) was not refused as malformed JSON: \(String(describing: Self.refusal(bytes)))")
                continue
            }
        }
    }

    @Test func refusesNULEmptyBodiesAndNonObjects() {
        #expect(Self.refusal(Array(#"{"description":"a\u0000b"}"#.utf8)) == .containsNUL)
        #expect(Self.refusal(Array(#"{"a\u0000":1}"#.utf8)) == .containsNUL)
        #expect(Self.refusal(Array(#"{"a":[{"b":"\u0000"}]}"#.utf8)) == .containsNUL)
        #expect(Self.refusal([]) == .empty)
        for document in ["null", "[]", "\"text\"", "1", "true"] {
            #expect(Self.refusal(Array(document.utf8)) == .notAnObject, "\(document)")
        }
        // An escaped backslash before u0000 is ordinary text.
        #expect(Self.refusal(Array(#"{"d":"a\\u0000b"}"#.utf8)) == nil)
    }

    @Test func decodesTypedValuesFromTheAcceptedDocument() throws {
        let body = try JSONRequestBody(
            Array(#"{"uses":5,"description":"caf\u00e9 \ud83d\ude00 ☕","other":[1,2.5,null]}"#.utf8))
        #expect(try body.decode(Tokens.self) == Tokens(uses: 5, description: "café 😀 ☕"))
        #expect(try body.string("description") == "café 😀 ☕")
        #expect(try body.string("missing") == nil)
        #expect(throws: JSONRequestBody.Problem.self) { try body.string("uses") }
        #expect(throws: JSONRequestBody.Problem.self) { try body.bool("uses") }
        #expect(throws: JSONRequestBody.Problem.self) { try body.requireOnly(["uses", "description"]) }
        try body.requireOnly(["uses", "description", "other"])
        let wrongType = try JSONRequestBody(Array(#"{"uses":"ten"}"#.utf8))
        #expect(throws: JSONRequestBody.Problem.invalidMember("uses: expected an integer")) {
            try wrongType.decode(Tokens.self)
        }
        let null = try JSONRequestBody(Array(#"{"flag":null}"#.utf8))
        #expect(throws: JSONRequestBody.Problem.self) { try null.bool("flag") }
    }

    @Test func descriptionsNeverEchoLongOrUnprintableNames() throws {
        let long = String(repeating: "n", count: 500)
        let problem = Self.refusal(Array(#"{"\#(long)":1,"\#(long)":2}"#.utf8))
        #expect(problem?.description.contains(long) == false)
        #expect(problem?.description.contains("duplicate member") == true)
        let short = Self.refusal(Array(#"{"uses":1,"uses":2}"#.utf8))
        #expect(short?.description.contains(#"duplicate member "uses""#) == true)
    }
}
