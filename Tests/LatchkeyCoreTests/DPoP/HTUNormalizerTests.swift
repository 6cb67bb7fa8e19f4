import Foundation
import Testing

@testable import LatchkeyCore

@Suite("HTUNormalizer")
struct HTUNormalizerTests {
    @Test(arguments: [
        ("https://api.example.com/v1/orders", "https://api.example.com/v1/orders"),
        ("HTTPS://API.Example.COM:443/v1/Orders", "https://api.example.com/v1/Orders"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:443/a", "http://example.com:443/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("https://example.com:8443/a?b=c#d", "https://example.com:8443/a"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com?x=1", "https://example.com/"),
        ("https://example.com#frag", "https://example.com/"),
        ("https://example.com:/a", "https://example.com/a"),
        ("https://example.com:0443/a", "https://example.com/a"),
        ("https://[::1]:8443/a", "https://[::1]:8443/a"),
        ("https://[::1]:443/a", "https://[::1]/a"),
        ("https://example.com/a%2Fb/../c", "https://example.com/a%2Fb/../c"),
        ("https://example.com/", "https://example.com/"),
    ])
    func normalises(_ input: String, _ expected: String) throws {
        #expect(try HTUNormalizer.normalize(input) == expected)
    }

    @Test(arguments: [
        "ftp://example.com/a", "example.com/a", "//example.com/a", "wss://example.com/", "https:///a",
        "https://user:pw@example.com/a", "https://example.com:99999/a", "https://example.com:8x/a",
        "https://exa mple.com/a", "https://example.com/a b", "", "https://[::1/a", "https://a:b:c/",
    ])
    func rejects(_ input: String) {
        #expect(throws: HTUNormalizer.Failure.self) { try HTUNormalizer.normalize(input) }
    }

    @Test func pathCaseAndTrailingSlashMatter() throws {
        #expect(try HTUNormalizer.normalize("https://e.com/A") != HTUNormalizer.normalize("https://e.com/a"))
        #expect(try HTUNormalizer.normalize("https://e.com/a/") != HTUNormalizer.normalize("https://e.com/a"))
    }
}
