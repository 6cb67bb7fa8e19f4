import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import NIOCore
import NIOHTTP1
import Testing

@testable import DPoPVerifier

/// The small parsers of the request path: trusted proxies, origins, public paths, credentials, targets, challenges.
@Suite struct RequestPartsTests {
    @Test func trustedProxiesMatchAddressesAndBlocks() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1"])
        func peer(_ ip: String) throws -> SocketAddress { try SocketAddress(ipAddress: ip, port: 1234) }
        #expect(proxies.contains(try peer("10.255.0.1")))
        #expect(proxies.contains(try peer("192.168.1.7")))
        #expect(!proxies.contains(try peer("192.168.1.8")))
        #expect(!proxies.contains(try peer("11.0.0.1")))
        #expect(proxies.contains(try peer("fd12::1")))
        #expect(proxies.contains(try peer("::1")))
        #expect(!proxies.contains(try peer("fe80::1")))
        #expect(proxies.contains(try peer("::ffff:10.1.2.3")), "IPv4-mapped IPv6 counts as IPv4")
        #expect(!proxies.contains(nil))
        #expect(!TrustedProxies.none.contains(try peer("10.0.0.1")))
        #expect(try TrustedProxies(["0.0.0.0/0"]).contains(try peer("8.8.8.8")))
        #expect(throws: ConfigurationError.self) { try TrustedProxies(["10.0.0.0/8/8"]) }
    }

    @Test func originsNormaliseAndSelectOnlyConfiguredOnes() throws {
        let origins = try ExternalOrigins(["HTTPS://API.Example.com:443/", "http://api.example.com:8080"])
        #expect(origins.origins == ["https://api.example.com", "http://api.example.com:8080"])
        #expect(origins.select(host: "api.example.com:8080", scheme: nil) == "http://api.example.com:8080")
        #expect(origins.select(host: "API.EXAMPLE.COM", scheme: nil) == "https://api.example.com")
        #expect(origins.select(host: "api.example.com:443", scheme: "https") == "https://api.example.com")
        #expect(
            origins.select(host: "api.example.com:8080", scheme: "https") == "https://api.example.com",
            "scheme must agree")
        #expect(origins.select(host: "evil.example.com", scheme: nil) == "https://api.example.com")
        #expect(origins.select(host: nil, scheme: nil) == "https://api.example.com")
        for bad in [
            "api.example.com", "https://", "https://api.example.com/v1", "https://user@api.example.com", "ftp://x",
        ] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ExternalOrigins([bad]) }
        }
    }

    @Test func publicPathsMatchOnlyCanonicalPaths() throws {
        let paths = try PublicPaths(["/health", "/public/*"])
        #expect(paths.contains("/health"))
        #expect(paths.contains("/public/a/b.png"))
        #expect(!paths.contains("/public"))
        #expect(!paths.contains("/healthy"))
        for sneaky in [
            "/public/../x", "/public/./x", "/public//x", "/public/%2E%2E/x", "/public%2fx", "/public/a\\b",
            "/public/..",
            "/public/%5C", "/public/a%5cb", "/public/%2e", "/public/a/%2F", "/public/a/.", "/public/a//",
        ] {
            #expect(!paths.contains(sneaky[...]), "\(sneaky)")
        }
        #expect(!PublicPaths.none.contains("/health"))
        #expect(paths.contains("/public/a%20b/%41.png"))  // other escapes are ordinary path bytes
    }

    /// The upstream connection does not re-validate header bytes, so identity values that could break
    /// out of their field (CR, LF, other controls) must never be added.
    @Test func identityValuesWithControlCharactersAreLeftOut() throws {
        let token = VerifiedAccessToken(
            issuer: "https://id.example.com/t/acme", tenant: try #require(TenantSlug(rawValue: "acme")),
            subject: "user\r\nX-Injected: 1", clientID: "client\u{7F}", scope: "a b",
            jkt: "thumb\nprint", expiresAt: 0)
        var headers = HTTPHeaders()
        IdentityHeaders.add(VerifiedIdentity(token: token), to: &headers)
        #expect(headers.map(\.name) == ["X-Latchkey-Tenant", "X-Latchkey-Scope"])
        #expect(headers["X-Latchkey-Scope"] == ["a b"])
        #expect(!headers.contains { $0.value.utf8.contains { $0 < 0x20 || $0 == 0x7F } })

        var fields = HTTPFields()
        IdentityHeaders.add(VerifiedIdentity(token: token), to: &fields)
        #expect(fields.map(\.name.canonicalName) == ["x-latchkey-tenant", "x-latchkey-scope"])
    }

    @Test func authorizationCredentialsFollowRFC7235() throws {
        func parse(_ values: [String]) -> Result<AuthorizationCredentials, AuthorizationCredentials.Problem> {
            var headers = HTTPFields()
            for value in values { headers.append(HTTPField(name: .authorization, value: value)) }
            return Result { () throws(AuthorizationCredentials.Problem) in
                try AuthorizationCredentials(headers: headers)
            }
        }
        #expect(try parse(["dpop abc.def-_~+/=="]).get().scheme == .dpop)
        #expect(try parse(["DPoP   abc"]).get().token == "abc")
        #expect(try parse(["BEARER abc"]).get().scheme == .bearer)
        #expect(throws: AuthorizationCredentials.Problem.missing) { try parse([]).get() }
        #expect(throws: AuthorizationCredentials.Problem.missing) { try parse(["Basic dXNlcg=="]).get() }
        // Field values are trimmed, so "DPoP " is a scheme without a token: no credentials.
        #expect(throws: AuthorizationCredentials.Problem.missing) { try parse(["DPoP "]).get() }
        for bad in [["DPoP a", "DPoP b"], ["DPoP a b"], ["DPoP =abc"], ["DPoP ab=c"], ["DPoP a\"b"], ["DPoP a,b"]] {
            guard case .failure(.malformed) = parse(bad) else {
                Issue.record("accepted \(bad)")
                continue
            }
        }
    }

    @Test func requestTargetsAreOriginFormOnly() {
        #expect(RequestTarget("/v1/orders?x=1")?.path == "/v1/orders")
        #expect(RequestTarget("/a%20b;c=d@e:f")?.path == "/a%20b;c=d@e:f")
        for bad in [
            "", "v1", "http://x/y", "*", "/a b", "/a<b", "/a\"b", "/é", "/" + String(repeating: "a", count: 9_000),
        ] {
            #expect(RequestTarget(bad) == nil, "\(bad.prefix(20))")
        }
    }

    @Test func absoluteFormTargetsSplitIntoAuthorityAndOriginForm() {
        #expect(
            RequestTarget.absoluteForm("http://evil.example.com/v1/orders?x=1")! == (
                "evil.example.com", "/v1/orders?x=1"
            ))
        #expect(RequestTarget.absoluteForm("HTTPS://API.example.com:8443")! == ("API.example.com:8443", "/"))
        #expect(RequestTarget.absoluteForm("https://api.example.com?q=1")! == ("api.example.com", "/?q=1"))
        for bad in ["/v1", "*", "ftp://x/y", "http:///y", "https://", "httpx://a/b"] {
            #expect(RequestTarget.absoluteForm(bad) == nil, "\(bad)")
        }
    }

    @Test func challengesAreRFC9449Shaped() {
        let challenges = Challenges(algorithms: [.es256, .edDSA], allowBearer: true)
        let rejection = SidecarRejection(
            kind: .useNonce, description: "a DPoP nonce is required", reason: "use_dpop_nonce")
        let error = challenges.response(for: rejection, nonce: "nonce-1")
        #expect(error.status == .unauthorized)
        #expect(error.code == "use_dpop_nonce")
        #expect(
            error.headers[values: .wwwAuthenticate] == [
                #"DPoP error="use_dpop_nonce", error_description="a DPoP nonce is required", algs="ES256 EdDSA""#,
                "Bearer",
            ])
        #expect(error.headers[HTTPField.Name("DPoP-Nonce")!] == "nonce-1")
        #expect(Challenges.sanitize("a\"b\\c\r\nd\u{7f}é") == "a b c  d   ")
        #expect(Challenges.sanitize(String(repeating: "x", count: 500)).count == 200)
        let unavailable = challenges.response(
            for: SidecarRejection(kind: .unavailable, description: "x", reason: "y"), nonce: nil)
        #expect(unavailable.status == .serviceUnavailable)
        #expect(unavailable.headers[.retryAfter] == "1")
        #expect(unavailable.headers[.wwwAuthenticate] == nil)
    }
}
