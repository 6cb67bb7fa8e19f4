import Foundation
import LatchkeyCore
import LatchkeyServer
import Testing

@testable import RegistrationGateway

/// RFC 3986 syntax of redirect URIs, before the RFC 8252 rules: one validator serves registration,
/// RFC 7592 updates, admin clients, templates and software statements.
@Suite struct RedirectURIValidatorTests {
    static func refusal(_ uri: String, _ type: ApplicationType = .native) -> String? {
        do {
            try RedirectURIValidator.validate(uri, field: "redirect_uris", applicationType: type)
            return nil
        } catch let error as OAuthError {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    @Test func malformedURIsAreInvalidRedirectURIs() {
        for uri in [
            // percent-encoding
            "com.example.app:/cb%zz", "com.example.app:/cb%4", "com.example.app:/cb%",
            "https://app.example.com/cb?x=%G1",
            // dot segments, also percent-encoded
            "com.example.app:/cb/../x", "com.example.app:/cb/./x", "com.example.app:/cb/..", "com.example.app:..",
            "com.example.app:/cb/%2e%2e/x", "com.example.app:/cb/%2E./x", "com.example.app:/cb/.%2e",
            "https://app.example.com/%2e/cb",
            "https://app.example.com/a/..?x=1",
            // ports
            "http://127.0.0.1:99999/cb", "http://127.0.0.1:0/cb", "http://127.0.0.1:/cb", "http://[::1]:65536/cb",
            "https://app.example.com:8x/cb", "https://app.example.com:-1/cb", "https://app.example.com:000443/cb",
            // nothing after the scheme
            "com.example.app:", "com.example.app:?x=1", "com.example.app://",
            // characters RFC 3986 does not allow unencoded
            #"com.example.app:/c\b"#, "com.example.app:/c|b", "com.example.app:/c{b}", "com.example.app:/c^b",
            "com.example.app:/c`b",
            #"com.example.app:/c"b"#, "com.example.app:/c<b>",
        ] {
            #expect(Self.refusal(uri) == "invalid_redirect_uri", "\(uri)")
        }
        #expect(Self.refusal("https://app.example.com/a/../cb", .web) == "invalid_redirect_uri")
        #expect(Self.refusal("https://app.example.com:70000/cb", .web) == "invalid_redirect_uri")
    }

    @Test func wellFormedURIsStillPass() {
        for uri in [
            "com.example.app:/cb", "com.example.app:/cb%20x", "com.example.app:/v1.2/cb", "com.example.app:/..cb/x.",
            "com.example.app:/cb/...", "com.example.app:cb", "com.example.app://callback", "com.example.app:///cb",
            "http://127.0.0.1:1/cb", "http://127.0.0.1:65535/cb", "http://[::1]/cb", "http://[::1]:8080/cb",
            "http://127.0.0.1/",
            "https://app.example.com", "https://app.example.com/", "https://app.example.com:8443/cb?x=%41&y=b",
            "com.example.app:/cb;v=1", "com.example.app:/a%2Fb",
        ] {
            #expect(Self.refusal(uri) == nil, "\(uri)")
        }
        #expect(Self.refusal("https://app.example.com/cb", .web) == nil)
    }
}
