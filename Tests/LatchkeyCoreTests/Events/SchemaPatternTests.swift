import Foundation
import Testing

@testable import LatchkeyCore

/// The built-in pattern matcher against `NSRegularExpression` (ICU), and ECMA-262 corner cases.
@Suite struct SchemaPatternTests {
    static let schemaPatterns = [
        "^[a-z0-9][a-z0-9-]{0,62}$",
        "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$",
        "^([\\x21\\x23-\\x5B\\x5D-\\x7E]+( [\\x21\\x23-\\x5B\\x5D-\\x7E]+)*)?$",
        "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{1,9}Z$",
        "^[A-Za-z0-9_-]{43}$", "^/latchkey/[a-z0-9-]+$", "^[a-z0-9]{1,20}$",
        // Shapes beyond today's schemas: alternation, unanchored search, classes, optional groups.
        "ab|cd", "colou?r", "(?:x|yz)+w", "\\d{2,}\\s\\w*", "[^a-c]", "a.c", "^$", "^(a|ab)(c|bcd)(d*)$",
    ]

    @Test func everySchemaPatternUsesTheBuiltInMatcher() throws {
        for source in Self.schemaPatterns {
            #expect(try SchemaPattern(source).isCompiled, "\(source)")
        }
    }

    @Test func agreesWithICUOnGeneratedStrings() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet =
            Array("abcdxyzw0123456789-_ ./:TZAF\u{e9}\u{1F600}\"\\\t[]")
            + ["", "2025-03-14T15:09:26.5Z"].flatMap { Array($0) }
        var inputs = [
            "", "acme", "acme-corp", "-acme", "ACME", String(repeating: "a", count: 63),
            String(repeating: "a", count: 64),
            "3f1c9a4e-8b2d-4c6f-9e1a-7d5b3c2a1f0e", "openid profile", "openid  profile", " openid", "a\"b",
            "2025-03-14T15:09:26.535897Z", "2025-03-14T15:09:26Z", "/latchkey/registration-gateway", "color", "colour",
            "xyzxw", "12 \t", "abd", "abcd", "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
        ]
        for _ in 0..<400 {
            let length = Int.random(in: 0...24, using: &generator)
            inputs.append(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        for source in Self.schemaPatterns {
            let mine = try SchemaPattern(source)
            let icu = try NSRegularExpression(pattern: source)
            for input in inputs where !input.contains("\n") {
                let expected = icu.firstMatch(in: input, range: NSRange(input.startIndex..., in: input)) != nil
                #expect(mine.matches(input) == expected, "\(source) on \(input.debugDescription)")
            }
        }
    }

    @Test func dollarMeansEndOfInputOnlyAsInECMAScript() throws {
        let slug = try SchemaPattern("^[a-z]+$")
        #expect(slug.matches("acme"))
        #expect(!slug.matches("acme\n"), "ICU and Python accept this; ECMA-262 does not")
    }

    @Test func unsupportedSyntaxFallsBackToICU() throws {
        let lookahead = try SchemaPattern("^(?=.*[0-9])[a-z0-9]+$")
        #expect(!lookahead.isCompiled)
        #expect(lookahead.matches("abc1"))
        #expect(!lookahead.matches("abc"))
        #expect(throws: (any Error).self) { try SchemaPattern("(unclosed") }
    }
}
