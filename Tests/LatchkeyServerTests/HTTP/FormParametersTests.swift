import Foundation
import Testing

@testable import LatchkeyServer

/// `application/x-www-form-urlencoded` parsing shared by the token service and the admin page.
@Suite struct FormParametersTests {
    @Test func decodesPlusPercentAndTreatsEmptyValuesAsOmitted() throws {
        let form = try FormParameters.parse("a=one+two&b=%C3%A9%26&c=&d")
        #expect(form["a"] == "one two")
        #expect(form["b"] == "é&")
        #expect(form["c"] == nil && form["d"] == nil)
    }

    @Test(arguments: ["a=1&a=2", "a=%zz", "=x", "a=%00", "a%00=1", "a=x%00y"])
    func malformedRepeatedOrNULParametersAreInvalidRequests(_ body: String) {
        let error = #expect(throws: OAuthError.self) { try FormParameters.parse(body) }
        #expect(error?.code == "invalid_request")
    }

    /// The byte-level decoding agrees with Foundation's `+` replacement and `removingPercentEncoding` on a few
    /// thousand generated parts: escapes of every kind (truncated, not hex, invalid UTF-8), `+`, non-ASCII text.
    @Test func decodingAgreesWithFoundation() {
        let pieces = [
            "a", "Z", "0", "+", "%", "%2", "%20", "%2B", "%2b", "%zz", "%G1", "%C3%A9", "%C3", "%E2%82%AC", "%FF",
            "%80", "é", "€", "🔐", "%00", "~", "-", ".", "_", "=", "%%", "%2%41",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let part = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
            let foundation = part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            #expect(FormParameters.decode(Substring(part)) == foundation, "\(part)")
        }
    }

    @Test(arguments: [
        "application/x-www-form-urlencoded", "Application/X-WWW-Form-URLEncoded",
        "application/x-www-form-urlencoded; charset=UTF-8", " \tapplication/x-www-form-urlencoded\t ;charset=utf-8",
        "application/x-www-form-urlencoded;",
    ])
    func theFormMediaTypeIsRecognisedWithParametersSpacesAndAnyCase(_ value: String) {
        #expect(FormParameters.isFormMediaType(value))
    }

    @Test(arguments: [
        nil, "", ";", "application/json", "application/x-www-form-urlencodedx", "application/x-www-form",
        "application/x-www-form-urlencoded\u{A0}", "multipart/form-data; boundary=x",
        "application x-www-form-urlencoded", "application/x-www-form-urlencoded\u{0}",
        // A byte that becomes `/` or `-` when bit 5 is set is not a letter: no case folding for it.
        "application\u{0F}x-www-form-urlencoded", "application/x\u{0D}www-form-urlencoded",
    ])
    func otherMediaTypesAreNotTheForm(_ value: String?) {
        #expect(!FormParameters.isFormMediaType(value))
    }
}
