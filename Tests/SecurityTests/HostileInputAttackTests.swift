import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// Strings from outside never reach PostgreSQL with U+0000 in them (it refuses such strings, which
/// surfaced as 500s): they are malformed credentials, answered with the RFC's 401.
@Suite struct HostileInputAttackTests {
    @Test func nulBytesInCredentialsAreRefusedAs401NotServerErrors() async throws {
        try await SeededPlatform.run { platform in
            let issuer = platform.endpoints.issuer
            let basic = "Basic " + Data("abc\u{0}:x".utf8).base64EncodedString()
            for (path, form) in [
                ("token", [("grant_type", "client_credentials")]), ("revoke", [("token", "x")]),
                ("introspect", [("token", "x")]),
            ] {
                let response = try await platform.http.postForm(
                    "\(issuer)/\(path)", form, headers: [("Authorization", basic)])
                #expect(response.status == 401, "/\(path) with U+0000 in the Basic client id: \(response.status)")
                #expect(response.json["error"] as? String == "invalid_client")
            }
            let secret = "Basic " + Data("\(platform.credentials.adminClientID):x\u{0}y".utf8).base64EncodedString()
            #expect(
                try await platform.http.postForm(
                    "\(issuer)/token", [("grant_type", "client_credentials")], headers: [("Authorization", secret)]
                ).status == 401)

            // An admin token whose `kid` holds U+0000, at the gateway's admin API and the audit API.
            let now = Date().timeIntervalSince1970.rounded(.down)
            let claims: [String: JSONValue] = [
                "iss": .string(issuer), "sub": "x", "client_id": "x", "scope": "admin",
                "jti": .string(UUID().uuidString),
                "aud": .string(issuer), "iat": .number(now), "exp": .number(now + 300),
            ]
            let forged = try CompactJWS.sign(
                payload: Data(CanonicalJSON.encode(.object(claims))), using: try SigningKey.generate(.es256),
                header: JWSHeaderParameters(typ: "at+jwt", kid: "key\u{0}1"))
            for url in [platform.adminBase, "\(platform.endpoints.audit)/audit/t/demo/verify"] {
                let response = try await platform.http.get(url, headers: platform.bearer(forged))
                #expect(
                    response.status == 401, "\(url) with U+0000 in kid: \(response.status) \(response.body.prefix(200))"
                )
                #expect(response.json["error"] as? String == "invalid_token")
            }
        }
    }
}
