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

    /// The shortcut for URLs already in normal form must agree with the full normalisation on every input:
    /// it may only skip work, never accept or rewrite differently.
    @Test func theShortcutAgreesWithTheFullNormalisation() {
        let schemes = ["https://", "http://", "HTTPS://", "Http://", "ftp://", "https:/", ""]
        let hosts = ["api.example.com", "API.example.com", "a", "", "[::1]", "x@y", "h%41st", "e.com.", "ex_a~m-p.le"]
        let ports = ["", ":", ":443", ":80", ":8443", ":0443", ":65535", ":65536", ":99999", ":8x", ":1:2"]
        let paths = ["", "/", "/a", "/A/b", "?q", "#f", "/a?q", "/a#f", "/a b", "/a%2F..", "/é", "/a\u{7F}", "/\t"]
        for scheme in schemes {
            for host in hosts {
                for port in ports {
                    for path in paths {
                        let url = scheme + host + port + path
                        let shortcut = url.utf8.withContiguousStorageIfAvailable(HTUNormalizer.isNormalized) ?? false
                        let full = try? HTUNormalizer.rebuild(url)
                        if shortcut { #expect(full == url, "\(url)") }
                        #expect((try? HTUNormalizer.normalize(url)) == full, "\(url)")
                    }
                }
            }
        }
    }
}
