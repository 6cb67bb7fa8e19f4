import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct JSONNULCheckTests {
    @Test(arguments: [
        (#"{"a":"x\u0000y"}"#, true),
        (#"{"\u0000":1}"#, true),
        (#"["\\\u0000"]"#, true),  // an escaped backslash, then a real escape
        (#"{"a":"x\\u0000y"}"#, false),  // an escaped backslash followed by the text u0000
        (#"{"a":"\u00000"}"#, true),
        (#"{"a":"\u0001\u1000\u0100"}"#, false),
        (#"{"a":"\"u0000"}"#, false),
        (#"{"a":"\u000"#, false),  // truncated: the parser reports it, not this check
        (#"{"a":"plain"}"#, false),
    ])
    func findsEscapedNULOnly(text: String, expected: Bool) {
        #expect(JSONNULCheck.containsNUL(Array(text.utf8)) == expected, "\(text)")
        if let parsed = try? LatchkeyJSON.decode(JSONValue.self, from: Data(text.utf8)) {
            #expect(JSONNULCheck.containsNUL(parsed) == expected, "\(text) parsed")
        }
    }

    @Test func aRawNULByteCounts() {
        #expect(JSONNULCheck.containsNUL([UInt8(ascii: "\""), 0, UInt8(ascii: "\"")]))
    }
}
