import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// Hostile input at the edges of the platform: one strict reading of JSON bodies everywhere, explicit
/// bodies for state-changing admin operations, well-formed redirect URIs, one `Authorization` header.
@Suite struct StrictParsingAttackTests {
    /// Bodies that are valid apart from one hostile detail added as an extra member. A lenient parser
    /// resolves each silently (first duplicate wins, raw control characters and broken UTF-8 pass,
    /// 1e400 becomes infinity) and the request succeeds; a U+0000 would reach PostgreSQL.
    static func hostileVariants(of valid: String) -> [(what: String, body: [UInt8])] {
        var open = Array(valid.utf8.dropLast())
        if open.last != UInt8(ascii: "{") { open.append(UInt8(ascii: ",")) }
        func with(_ member: [UInt8]) -> [UInt8] { open + member + [UInt8(ascii: "}")] }
        return [
            ("a duplicate member", with(Array(#""note":"x","note":"y""#.utf8))),
            ("a raw line feed in a string", with(Array("\"note\":\"a\nb\"".utf8))),
            ("a raw tab in a string", with(Array("\"note\":\"a\tb\"".utf8))),
            ("invalid UTF-8 in a string", with(Array("\"note\":\"a".utf8) + [0xC3, 0x28, 0xFF] + Array("\"".utf8))),
            ("a lone surrogate escape", with(Array(#""note":"\ud800""#.utf8))),
            ("a number out of range", with(Array(#""note":1e400"#.utf8))),
            ("an escaped U+0000", with(Array(#""note":"a\u0000b""#.utf8))),
        ]
    }

    static func json(_ token: String) -> [(String, String)] {
        [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
    }

    @Test func hostileJSONIsRefusedAlikeByEveryEndpointThatReadsJSON() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let base = platform.adminBase
            let gateway = platform.endpoints.gateway
            let native =
                #""redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]"#
            let minted = try expect(
                try await platform.http.postJSON(
                    "\(base)/initial-access-tokens", #"{"uses":1000}"#, headers: platform.bearer(admin)), 201,
                "initial access token")
            let initialAccessToken = try required(
                minted.json["initial_access_token"] as? String, "initial access token")
            let registered = try expect(
                try await platform.http.postJSON(
                    "\(gateway)/t/demo/register", "{\(native)}", headers: platform.bearer(initialAccessToken)), 201,
                "register")
            let instance = try required(registered.json["client_id"] as? String, "client id")
            var registrationToken = try required(
                registered.json["registration_access_token"] as? String, "registration token")
            let victim = try await platform.createClient(
                #"{"client_name":"victim","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"openid"}"#,
                adminToken: admin)
            let victimID = try required(victim.json["client_id"] as? String, "victim client id")
            let user = try expect(
                try await platform.http.postJSON(
                    "\(base)/users", #"{"username":"strict-user","password":"correct horse battery staple"}"#,
                    headers: platform.bearer(admin)), 201, "create a user")
            let userID = try required(user.json["user_id"] as? String, "user id")
            let policyVersion =
                try await platform.http.get(base, headers: platform.bearer(admin)).json["policy_version"] as? Int
            let policy =
                #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read","orders:write"],"branding":{"name":"Latchkey Demo"},"self_signup":true}"#

            var serial = 0
            func unique() -> String {
                serial += 1
                return "strict-\(serial)"
            }
            // (endpoint, method, URL, a valid body for each attempt, the same body with a duplicated member that matters, error)
            let endpoints: [(String, String, String, () -> String, String, String)] = [
                (
                    "registration", "POST", "\(gateway)/t/demo/register", { "{\(native)}" },
                    #"{"redirect_uris":["com.example.app:/cb"],"redirect_uris":["com.attacker.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#,
                    "invalid_client_metadata"
                ),
                (
                    "RFC 7592 update", "PUT", "\(gateway)/t/demo/register/\(instance)",
                    { #"{"client_id":"\#(instance)",\#(native)}"# },
                    #"{"client_id":"\#(instance)","redirect_uris":["com.example.app:/cb"],"redirect_uris":["com.attacker.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#,
                    "invalid_client_metadata"
                ),
                (
                    "admin client creation", "POST", "\(base)/clients",
                    {
                        #"{"client_name":"strict","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"openid"}"#
                    },
                    #"{"client_name":"strict","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"openid","first_party":false,"first_party":true}"#,
                    "invalid_request"
                ),
                (
                    "initial access token creation", "POST", "\(base)/initial-access-tokens", { #"{"uses":1}"# },
                    #"{"uses":1,"uses":100000}"#, "invalid_request"
                ),
                (
                    "template creation", "POST", "\(base)/templates",
                    { #"{"software_id":"\#(unique())","metadata":{\#(native)}}"# },
                    #"{"software_id":"strict-dup","software_id":"demo-mobile","metadata":{\#(native)}}"#,
                    "invalid_request"
                ),
                (
                    "template update", "PUT", "\(base)/templates/demo-mobile",
                    { #"{"metadata":{"client_name":"Demo mobile",\#(native)},"overridable_fields":["client_name"]}"# },
                    #"{"metadata":{"client_name":"Demo mobile",\#(native)},"overridable_fields":["client_name"],"overridable_fields":["redirect_uris"]}"#,
                    "invalid_request"
                ),
                (
                    "user creation", "POST", "\(base)/users",
                    { #"{"username":"\#(unique())","password":"correct horse battery staple"}"# },
                    #"{"username":"strict-dup","password":"correct horse battery staple","password":"short"}"#,
                    "invalid_request"
                ),
                (
                    "tenant creation", "POST", "\(gateway)/admin/tenants", { #"{"tenant_id":"\#(unique())"}"# },
                    #"{"tenant_id":"strict-dup","tenant_id":"demo"}"#, "invalid_request"
                ),
                (
                    "policy update", "PUT", "\(base)/policy", { policy },
                    #"{"registration_mechanisms":["user_token"],"registration_mechanisms":["open"]}"#, "invalid_request"
                ),
                (
                    "client revocation", "POST", "\(base)/clients/\(victimID)/revoke", { #"{"reason":"strict"}"# },
                    #"{"reason":"strict","reason":"other"}"#, "invalid_request"
                ),
                (
                    "user's clients revocation", "POST", "\(base)/users/\(userID)/revoke-clients",
                    { #"{"reason":"strict"}"# },
                    #"{"reason":"strict","reason":"other"}"#, "invalid_request"
                ),
                (
                    "user disabling", "POST", "\(base)/users/\(userID)/disable", { #"{"reason":"strict"}"# },
                    #"{"reason":"strict","reason":"other"}"#, "invalid_request"
                ),
                (
                    "user enabling", "POST", "\(base)/users/\(userID)/enable", { #"{"reason":"strict"}"# },
                    #"{"reason":"strict","reason":"other"}"#, "invalid_request"
                ),
            ]
            for (endpoint, method, url, valid, duplicated, error) in endpoints {
                // A fresh valid body per attempt, so a lenient server would accept each one (no name clashes).
                let attempts =
                    Self.hostileVariants(of: "{}").indices.map { Self.hostileVariants(of: valid())[$0] }
                    + [("a duplicated member that matters", Array(duplicated.utf8))]
                for (what, body) in attempts {
                    let token =
                        url.contains("/register/")
                        ? registrationToken : url.hasSuffix("/register") ? initialAccessToken : admin
                    let response = try rawHTTPExchange(method, url, headers: Self.json(token), body: body)
                    #expect(
                        response.status == 400 && response.error == error,
                        "\(endpoint) with \(what): \(response.status) \(response.text)")
                    // A lenient update rotates the registration access token; keep up so later attempts still authenticate.
                    if method == "PUT", let rotated = response.json["registration_access_token"] as? String {
                        registrationToken = rotated
                    }
                }
            }

            // Nothing the refused bodies asked for happened.
            let after = try await platform.http.get(base, headers: platform.bearer(admin))
            #expect(after.json["policy_version"] as? Int == policyVersion)
            let victimAfter = try await platform.http.get(
                "\(base)/clients/\(victimID)", headers: platform.bearer(admin))
            #expect(victimAfter.json["status"] as? String == "active")
            let template = try await platform.http.get("\(base)/templates", headers: platform.bearer(admin))
            let templates = template.json["templates"] as? [[String: Any]] ?? []
            #expect(templates.map { $0["software_id"] as? String } == ["demo-mobile"])
            let instanceAfter = try await platform.http.get(
                "\(gateway)/t/demo/register/\(instance)", headers: platform.bearer(registrationToken))
            #expect(instanceAfter.json["redirect_uris"] as? [String] == ["com.example.app:/cb"])
            // The strict reading refuses only what is broken: the valid bodies still work.
            let fine = try rawHTTPExchange(
                "POST", "\(gateway)/t/demo/register", headers: Self.json(initialAccessToken),
                body: Array(#"{"client_name":"caf\u00e9 ☕ \ud83d\ude00",\#(native)}"#.utf8))
            #expect(fine.status == 201, "\(fine.text)")
            #expect(fine.json["client_name"] as? String == "café ☕ 😀")
        }
    }

    /// Rotating the signing key, revoking and disabling change state: each needs a JSON body that says so.
    /// An empty, null or mistyped body, or one a lenient parser would have to guess at, changes nothing.
    @Test func stateChangingAdminOperationsNeedAnExplicitValidBody() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let base = platform.adminBase
            let rotate = "\(base)/keys/rotate"
            let refused: [(String, [(String, String)], [UInt8])] = [
                ("no body and no content type", [("Authorization", "Bearer \(admin)")], []),
                ("an empty JSON body", Self.json(admin), []),
                ("null", Self.json(admin), Array("null".utf8)),
                ("an array", Self.json(admin), Array("[]".utf8)),
                ("a bare string", Self.json(admin), Array(#""ES256""#.utf8)),
                ("a numeric algorithm", Self.json(admin), Array(#"{"algorithm":256}"#.utf8)),
                ("a null algorithm", Self.json(admin), Array(#"{"algorithm":null}"#.utf8)),
                ("a misspelt member", Self.json(admin), Array(#"{"algoritm":"RS256"}"#.utf8)),
                ("two algorithms", Self.json(admin), Array(#"{"algorithm":"ES256","algorithm":"RS256"}"#.utf8)),
                ("invalid UTF-8", Self.json(admin), Array(#"{"note":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)),
                ("a lone surrogate", Self.json(admin), Array(#"{"note":"\udc00"}"#.utf8)),
                ("a number out of range", Self.json(admin), Array(#"{"note":-1e400}"#.utf8)),
            ]
            for (what, headers, body) in refused {
                let response = try rawHTTPExchange("POST", rotate, headers: headers, body: body)
                #expect(
                    response.status == 400 && response.error == "invalid_request",
                    "keys/rotate with \(what): \(response.status) \(response.text)")
            }
            let keys = try await platform.http.get("\(base)/keys", headers: platform.bearer(admin))
            let staged = (keys.json["keys"] as? [[String: Any]] ?? []).filter { $0["status"] as? String == "staged" }
            #expect(staged.isEmpty, "a refused request staged a key: \(keys.body.prefix(400))")

            // Every other state-changing admin operation refuses a missing body as well.
            let victim = try await platform.createClient(
                #"{"client_name":"victim","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"openid"}"#,
                adminToken: admin)
            let victimID = try required(victim.json["client_id"] as? String, "victim client id")
            let user = try expect(
                try await platform.http.postJSON(
                    "\(base)/users", #"{"username":"explicit-user","password":"correct horse battery staple"}"#,
                    headers: platform.bearer(admin)), 201, "create a user")
            let userID = try required(user.json["user_id"] as? String, "user id")
            for (method, path) in [
                ("POST", "/admin/tenants"), ("PUT", "\(base)/policy"), ("POST", "\(base)/clients"),
                ("POST", "\(base)/clients/\(victimID)/revoke"),
                ("POST", "\(base)/users/\(userID)/revoke-clients"), ("POST", "\(base)/users/\(userID)/disable"),
                ("POST", "\(base)/users/\(userID)/enable"), ("POST", "\(base)/templates"),
                ("PUT", "\(base)/templates/demo-mobile"),
                ("POST", "\(base)/users"), ("POST", "\(base)/initial-access-tokens"),
            ] {
                let url = path.hasPrefix("/") ? platform.endpoints.gateway + path : path
                for (what, headers) in [
                    ("no body", [("Authorization", "Bearer \(admin)")]), ("an empty JSON body", Self.json(admin)),
                ] {
                    let response = try rawHTTPExchange(method, url, headers: headers, body: [])
                    #expect(
                        response.status == 400 && response.error == "invalid_request",
                        "\(method) \(path) with \(what): \(response.status) \(response.text)")
                }
            }
            #expect(
                try await platform.http.get("\(base)/clients/\(victimID)", headers: platform.bearer(admin)).json[
                    "status"] as? String == "active")

            // An explicit body rotates: `{}` keeps the policy's algorithm.
            let rotated = try rawHTTPExchange("POST", rotate, headers: Self.json(admin), body: Array("{}".utf8))
            #expect(rotated.status == 201, "\(rotated.text)")
            #expect(rotated.json["alg"] as? String == "ES256")
        }
    }

    /// RFC 3986 syntax and RFC 8252 rules for every redirect URI, wherever a client or template is made.
    @Test func malformedRedirectURIsAreRefusedWhereverClientsAreMade() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let base = platform.adminBase
            let gateway = platform.endpoints.gateway
            // Dozens of registrations from one address within a minute: the registration limits are switched off.
            try expect(
                try await platform.http.send(
                    "PUT", "\(base)/policy", headers: Self.json(admin),
                    body:
                        #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read","orders:write"],"self_signup":true,"rate_limits":{"registration":{"per_tenant_per_minute":0,"per_source_per_minute":0}}}"#
                ),
                200, "policy without registration limits")
            let minted = try expect(
                try await platform.http.postJSON(
                    "\(base)/initial-access-tokens", #"{"uses":100}"#, headers: platform.bearer(admin)), 201,
                "initial access token")
            let initialAccessToken = try required(
                minted.json["initial_access_token"] as? String, "initial access token")
            let good = "com.example.app:/cb"
            func body(_ uri: String, extra: String = "") -> String {
                #"{\#(extra)"redirect_uris":["\#(uri)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#
            }
            let registered = try expect(
                try await platform.http.postJSON(
                    "\(gateway)/t/demo/register", body(good), headers: platform.bearer(initialAccessToken)), 201,
                "register")
            let instance = try required(registered.json["client_id"] as? String, "client id")
            var registrationToken = try required(
                registered.json["registration_access_token"] as? String, "registration token")

            let malformed = [
                "com.example.app:/cb%zz", "com.example.app:/cb%4", "com.example.app:/cb/../x",
                "com.example.app:/cb/./x",
                "com.example.app:/cb/%2e%2e/x", "com.example.app:/cb/%2E./x", "com.example.app:/cb/.%2e",
                "com.example.app:..",
                "http://127.0.0.1:99999/cb", "http://127.0.0.1:0/cb", "http://[::1]:65536/cb",
                "https://app.example.com:8x/cb",
                "com.example.app:", "com.example.app:?x=1", "https://app.example.com/cb?x=%G1", "com.example.app:/c|b",
            ]
            for uri in malformed {
                let attempts: [(String, String, String, String, String)] = [
                    ("registration", "POST", "\(gateway)/t/demo/register", body(uri), initialAccessToken),
                    (
                        "RFC 7592 update", "PUT", "\(gateway)/t/demo/register/\(instance)",
                        body(uri, extra: #""client_id":"\#(instance)","#), registrationToken
                    ),
                    ("admin client creation", "POST", "\(base)/clients", body(uri), admin),
                    (
                        "template creation", "POST", "\(base)/templates",
                        #"{"software_id":"bad-uri","metadata":\#(body(uri))}"#, admin
                    ),
                    (
                        "post-logout redirect", "POST", "\(gateway)/t/demo/register",
                        body(good, extra: #""post_logout_redirect_uris":["\#(uri)"],"#), initialAccessToken
                    ),
                ]
                for (where_, method, url, json, token) in attempts {
                    let response = try rawHTTPExchange(method, url, headers: Self.json(token), body: Array(json.utf8))
                    #expect(
                        response.status == 400 && response.error == "invalid_redirect_uri",
                        "\(where_) with \(uri): \(response.status) \(response.text)")
                    if method == "PUT", let rotated = response.json["registration_access_token"] as? String {
                        registrationToken = rotated
                    }
                }
            }
            let templates = try await platform.http.get("\(base)/templates", headers: platform.bearer(admin))
            #expect(!templates.body.contains("bad-uri"))

            // Well-formed URIs with percent-encoding, dots inside segments, loopback ports and queries still register.
            for uri in [
                "com.example.app:/cb%20x", "com.example.app:/v1.2/cb", "com.example.app:/..cb/x.",
                "http://127.0.0.1:65535/cb",
                "http://[::1]/cb", "https://app.example.com/cb?x=%41", "https://app.example.com/",
            ] {
                let response = try await platform.http.postJSON(
                    "\(gateway)/t/demo/register", body(uri), headers: platform.bearer(initialAccessToken))
                #expect(response.status == 201, "\(uri): \(response.status) \(response.body.prefix(300))")
            }
        }
    }

    /// RFC 6750 §3.1: a request with two credentials is malformed — 400 `invalid_request`, not 401 — at
    /// every endpoint that takes a bearer token (the sidecar aside, which has its own rules).
    @Test func twoAuthorizationHeadersAreABadRequestAtEveryBearerEndpoint() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let base = platform.adminBase
            let gateway = platform.endpoints.gateway
            let minted = try expect(
                try await platform.http.postJSON(
                    "\(base)/initial-access-tokens", #"{"uses":10}"#, headers: platform.bearer(admin)), 201,
                "initial access token")
            let initialAccessToken = try required(
                minted.json["initial_access_token"] as? String, "initial access token")
            let metadata =
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#
            let registered = try expect(
                try await platform.http.postJSON(
                    "\(gateway)/t/demo/register", metadata, headers: platform.bearer(initialAccessToken)), 201,
                "register")
            let instance = try required(registered.json["client_id"] as? String, "client id")
            let registrationToken = try required(
                registered.json["registration_access_token"] as? String, "registration token")
            let put =
                #"{"client_id":"\#(instance)","redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#

            let attempts: [(String, String, String, String?)] = [
                ("GET", "\(platform.endpoints.issuer)/userinfo", admin, nil),
                ("POST", "\(gateway)/t/demo/register", initialAccessToken, metadata),
                ("GET", "\(gateway)/t/demo/register/\(instance)", registrationToken, nil),
                ("PUT", "\(gateway)/t/demo/register/\(instance)", registrationToken, put),
                ("DELETE", "\(gateway)/t/demo/register/\(instance)", registrationToken, nil),
                ("GET", base, admin, nil),
                ("POST", "\(base)/initial-access-tokens", admin, #"{"uses":1}"#),
                ("GET", "\(platform.endpoints.audit)/audit/t/demo/verify", admin, nil),
            ]
            for (method, url, token, body) in attempts {
                for pair in [[token, token], [token, "other"]] {
                    var headers = pair.map { ("Authorization", "Bearer \($0)") }
                    if body != nil { headers.append(("Content-Type", "application/json")) }
                    let response = try rawHTTPExchange(method, url, headers: headers, body: Array((body ?? "").utf8))
                    #expect(
                        response.status == 400 && response.error == "invalid_request",
                        "\(method) \(url): \(response.status) \(response.text)")
                }
            }
            // The instance was neither changed nor deleted by the refused requests.
            let read = try await platform.http.get(
                "\(gateway)/t/demo/register/\(instance)", headers: platform.bearer(registrationToken))
            #expect(read.status == 200, "\(read.body.prefix(300))")
        }
    }
}
