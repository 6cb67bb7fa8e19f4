import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

@Suite struct ClientCredentialsGrantTests {
    @Test func basicAndPostAuthenticationIssueVerifiableAtJWTsAndAnEvent() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let basicSecret = try #require(try await fixture.insertClient("svc-basic", scope: "api read"))
            let postSecret = try #require(
                try await fixture.insertClient("svc-post", authMethod: .clientSecretPost, scope: "api"))
            var token = ""
            try await client.execute(
                uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: ("svc-basic", basicSecret)),
                body: TokenRequest.form([("grant_type", "client_credentials"), ("scope", "read")])
            ) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(response.headers[.pragma] == "no-cache")
                let json = TokenRequest.json(response)
                #expect(json["token_type"] as? String == "Bearer")
                #expect(json["scope"] as? String == "read")
                #expect(json["expires_in"] as? Int == 600)
                #expect(json["refresh_token"] == nil)
                token = try #require(json["access_token"] as? String)
            }
            #expect(try CompactJWS(parsing: token).header.typ == "at+jwt")
            let claims = try await fixture.verifyAccessToken(token, client: client)
            #expect(claims.clientID == "svc-basic")
            #expect(claims.sub == "svc-basic")
            #expect(claims.scope == "read")
            #expect(claims.cnf == nil)
            // The gateway's inactive-client expiry reads this (written in batches, a few seconds later).
            try await eventually("svc-basic's last use is recorded", within: .seconds(30)) {
                try await fixture.count(
                    "SELECT count(*)::int8 FROM clients WHERE client_id = 'svc-basic' AND last_used_at > now() - interval '5 minutes'"
                ) == 1
            }
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM clients WHERE client_id = 'svc-post' AND last_used_at IS NULL") == 1)
            try await client.execute(
                uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(),
                body: TokenRequest.form([
                    ("grant_type", "client_credentials"), ("client_id", "svc-post"), ("client_secret", postSecret),
                ])
            ) { response in
                #expect(response.status == .ok)
                #expect(TokenRequest.json(response)["scope"] as? String == "api")
            }
            let events = try await fixture.outboxPayloads(type: .tokenIssued)
            #expect(events.count == 2)
            let event = try CloudEvent<TokenIssued>.decode(from: Data(events[0].utf8))
            #expect(event.data.jti == claims.jti)
            #expect(event.data.grantType == .clientCredentials)
            #expect(event.subject == "svc-basic")
            #expect(!events[0].contains(token.split(separator: ".")[2]))
            #expect(!events[0].contains(basicSecret))
        }
    }

    @Test func clientAuthenticationFailuresAreInvalidClient401() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            try await fixture.insertClient("gone", scope: "api", status: .revoked)
            let otherTenant = TestEnvironment.uniqueTenant("tok")
            try await TestDatabase.createTenant(otherTenant, in: fixture.database)
            let foreignSecret = try #require(
                try await fixture.insertClient("foreign", tenant: otherTenant, scope: "api"))
            let attempts: [(HTTPFields, [(String, String)])] = [
                (TokenRequest.headers(basic: ("svc", "wrong")), []),
                (TokenRequest.headers(basic: ("nobody", secret)), []),
                (TokenRequest.headers(basic: ("gone", secret)), []),
                (TokenRequest.headers(basic: ("foreign", foreignSecret)), []),
                // client_secret_basic client trying client_secret_post.
                (TokenRequest.headers(), [("client_id", "svc"), ("client_secret", secret)]),
                // A confidential client pretending to be public.
                (TokenRequest.headers(), [("client_id", "svc")]),
                (TokenRequest.headers(), []),
            ]
            for (headers, extra) in attempts {
                try await client.execute(
                    uri: fixture.tokenPath, method: .post, headers: headers,
                    body: TokenRequest.form([("grant_type", "client_credentials")] + extra)
                ) { response in
                    #expect(response.status == .unauthorized)
                    #expect(TokenRequest.json(response)["error"] as? String == "invalid_client")
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
                }
            }
            // Revoking a client takes effect at once.
            try await fixture.setClientStatus("svc", .revoked)
            try await client.execute(
                uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: ("svc", secret)),
                body: TokenRequest.form([("grant_type", "client_credentials")])
            ) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test func grantAndScopeRulesUseTheRFC6749Codes() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            let codeOnly = try #require(
                try await fixture.insertClient("web", grantTypes: [.authorizationCode], scope: "api"))
            try await fixture.insertClient("public", authMethod: .noAuthentication, grantTypes: [.clientCredentials])
            let dcrSecret = try #require(try await fixture.insertClient("dcr-svc", scope: "dcr api", isStatic: true))
            let cases: [(HTTPFields, [(String, String)], String)] = [
                (TokenRequest.headers(basic: ("svc", secret)), [("grant_type", "password")], "unsupported_grant_type"),
                (TokenRequest.headers(basic: ("svc", secret)), [("grant_type", "implicit")], "unsupported_grant_type"),
                (TokenRequest.headers(basic: ("svc", secret)), [], "invalid_request"),
                (
                    TokenRequest.headers(basic: ("svc", secret)),
                    [("grant_type", "client_credentials"), ("scope", "api admin")], "invalid_scope"
                ),
                (
                    TokenRequest.headers(basic: ("dcr-svc", dcrSecret)),
                    [("grant_type", "client_credentials"), ("scope", "dcr")], "invalid_scope"
                ),
                (
                    TokenRequest.headers(basic: ("web", codeOnly)), [("grant_type", "client_credentials")],
                    "unauthorized_client"
                ),
                (
                    TokenRequest.headers(), [("grant_type", "client_credentials"), ("client_id", "public")],
                    "unauthorized_client"
                ),
            ]
            for (headers, form, expected) in cases {
                try await client.execute(
                    uri: fixture.tokenPath, method: .post, headers: headers, body: TokenRequest.form(form)
                ) { response in
                    #expect(response.status == .badRequest, "\(form)")
                    #expect(TokenRequest.json(response)["error"] as? String == expected, "\(form)")
                    #expect(response.headers[.cacheControl] == "no-store")
                }
            }
        }
    }

    @Test func hostileBodiesAreRefusedWith4xx() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            let auth = TokenRequest.basic("svc", secret)
            let cases: [(String?, String, Int, String)] = [
                ("application/json", #"{"grant_type":"client_credentials"}"#, 415, "invalid_request"),
                (nil, "grant_type=client_credentials", 415, "invalid_request"),
                (
                    "application/x-www-form-urlencoded", "grant_type=client_credentials&grant_type=client_credentials",
                    400, "invalid_request"
                ),
                (
                    "application/x-www-form-urlencoded", "grant_type=client_credentials&scope=a&scope=", 400,
                    "invalid_request"
                ),
                ("application/x-www-form-urlencoded", "grant_type=%ZZ", 400, "invalid_request"),
                ("application/x-www-form-urlencoded", "=x&grant_type=client_credentials", 400, "invalid_request"),
                (
                    "application/x-www-form-urlencoded", "grant_type=client_credentials&client_secret=x", 400,
                    "invalid_request"
                ),
                ("application/x-www-form-urlencoded", String(repeating: "a", count: 70_000), 413, "request_too_large"),
            ]
            for (contentType, body, status, code) in cases {
                var headers: HTTPFields = [.authorization: auth]
                if let contentType { headers[.contentType] = contentType }
                try await client.execute(
                    uri: fixture.tokenPath, method: .post, headers: headers, body: ByteBuffer(string: body)
                ) { response in
                    #expect(response.status.code == status, "\(body.prefix(60))")
                    #expect(TokenRequest.json(response)["error"] as? String == code, "\(body.prefix(60))")
                }
            }
            for header in ["Basic !!!", "Basic " + Data("no-colon".utf8).base64EncodedString(), "Bearer abc"] {
                try await client.execute(
                    uri: fixture.tokenPath, method: .post,
                    headers: [.contentType: "application/x-www-form-urlencoded", .authorization: header],
                    body: TokenRequest.form([("grant_type", "client_credentials")])
                ) { response in
                    #expect(response.status == .unauthorized, "\(header)")
                    #expect(TokenRequest.json(response)["error"] as? String == "invalid_client")
                }
            }
            try await client.execute(uri: fixture.tokenPath, method: .get) { response in
                #expect(response.status.code >= 400 && response.status.code < 500)
            }
        }
    }
}
