import LatchkeyServer
import Testing

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
}
