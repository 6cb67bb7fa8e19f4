import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// The token response is written member by member; the bytes are the ones its `Encodable` conformance
/// writes, with and without a refresh and an ID token, and never with the access token's `jti`.
@Suite struct TokenResponseJSONTests {
    @Test func theResponseIsWrittenAsItsEncodableWritesIt() throws {
        for index in 0..<4 {
            let response = TokenResponse(
                accessToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig-\(index)",
                tokenType: index.isMultiple(of: 2) ? "DPoP" : "Bearer",
                expiresIn: 600 - index, scope: index == 3 ? "" : "openid api/read \"x\"",
                refreshToken: index.isMultiple(of: 2) ? "rt-\(index)" : nil, idToken: index > 1 ? "id-\(index)" : nil,
                accessTokenID: "jti-\(index)")
            try JSONEncoderParity.expectSame(response, dates: .deferredToDate, "response \(index)")
            let written = try #require(try CompactJSONEncoder.encode(response, dates: .deferredToDate))
            #expect(!String(decoding: written, as: UTF8.self).contains("jti-"))
        }
    }
}
