import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The claims a grant signs are written member by member; the bytes are the ones their `Encodable`
/// conformance writes (what a verifier decodes), whichever claims are present.
@Suite struct AccessTokenClaimsJSONTests {
    @Test func claimsAreWrittenAsTheirEncodableWritesThem() throws {
        let audiences = [Audience("https://api.acme.example/v1"), Audience(["a", "b/c"]), Audience([])]
        let texts = ["", "svc", "\"quoted\" \\ /", "line\nbreak\u{1F}", "é 漢字 😀"]
        for (index, text) in texts.enumerated() {
            let claims = AccessTokenClaims(
                iss: "https://idp.acme.example/t/\(text)", sub: text, aud: audiences[index % audiences.count],
                clientID: text, scope: index.isMultiple(of: 2) ? "api read" : nil, jti: "jti-\(index)",
                iat: 1_763_800_000 - Int64(index), exp: index == 4 ? -1 : 1_763_800_600,
                nbf: index.isMultiple(of: 3) ? 1_763_799_990 : nil,
                cnf: [nil, .init(jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"), .init(jkt: nil)][index % 3])
            try JSONEncoderParity.expectSame(claims, dates: .deferredToDate, "claims \(index)")
        }
    }
}
