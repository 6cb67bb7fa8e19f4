import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationEndpointTests {
    static let native =
        #"{"redirect_uris":["com.example.app:/callback"],"client_name":"Example","scope":"openid profile"}"#

    @Test func userTokenRegistrationReturnsEveryFieldAndStoresHashesAndEvent() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let response = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token,
                json:
                    #"{"redirect_uris":["com.example.app:/callback"],"client_name":"Example","scope":"openid profile","unknown_member":{"x":1},"dpop_bound_access_tokens":true}"#
            )
            #expect(response.status == .created)
            #expect(response.headers[.cacheControl] == "no-store")
            let body = response.json
            let clientID = try #require(body["client_id"] as? String)
            let secret = try #require(body["client_secret"] as? String)
            let registrationToken = try #require(body["registration_access_token"] as? String)
            #expect(secret.utf8.count >= 43)
            #expect(body["client_id_issued_at"] is Int)
            #expect(body["client_secret_expires_at"] as? Int == 0)
            #expect(
                body["registration_client_uri"] as? String
                    == "\(GatewayHarness.publicURL)/t/\(h.tenant)/register/\(clientID)")
            #expect(body["token_endpoint_auth_method"] as? String == "client_secret_basic")
            #expect(body["grant_types"] as? [String] == ["authorization_code"])
            #expect(body["response_types"] as? [String] == ["code"])
            #expect(body["application_type"] as? String == "native")
            #expect(body["dpop_bound_access_tokens"] as? Bool == true)
            #expect(body["scope"] as? String == "openid profile")
            #expect(body["unknown_member"] == nil)

            let row = try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection -> (String?, String?, UUID?, String)? in
                    let rows = try await connection.query(
                        "SELECT client_secret_hash, registration_token_hash, authenticated_user, registration_mechanism FROM clients WHERE client_id = \(clientID)",
                        logger: database.logger)
                    for try await row in rows.decode((String?, String?, UUID?, String).self) { return row }
                    return nil
                }
            }
            let stored = try #require(row)
            #expect(stored.0 == GatewayHarness.hasher.hash(secret))
            #expect(stored.1 == GatewayHarness.hasher.hash(registrationToken))
            #expect(stored.2 == h.user)
            #expect(stored.3 == "user_token")
            let events = try await h.outboxPayloads(.clientRegistered)
            #expect(events.count == 1)
            let event = try #require(events.first)
            #expect(event.contains(clientID))
            #expect(!event.contains(secret) && !event.contains(registrationToken) && !event.contains(token))
            let decoded = try CloudEvent<ClientRegistered>.decode(from: Data(event.utf8))
            #expect(decoded.data.authenticatedUser == h.user)
            #expect(decoded.data.registrationMechanism == .userToken)
        }
    }

    @Test func publicAndPrivateKeyJWTClientsGetNoSecret() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        let jwks =
            #"{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#
        try await GatewayHarness.withApp { client in
            let publicClient = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token,
                json: #"{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}"#)
            #expect(publicClient.status == .created)
            #expect(publicClient.json["client_secret"] == nil)
            let keyClient = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token,
                json:
                    #"{"redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":\#(jwks)}"#
            )
            #expect(keyClient.status == .created)
            #expect(keyClient.json["client_secret"] == nil)
        }
    }

    /// One accepted and one refused request per registration metadata rule.
    @Test(
        arguments: [
            // native redirect URIs
            (#"{"redirect_uris":["com.example.app:/cb"]}"#, nil),
            (#"{"redirect_uris":["myapp:/cb"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["http://127.0.0.1:51004/cb"]}"#, nil),
            (#"{"redirect_uris":["http://[::1]/cb"]}"#, nil),
            (#"{"redirect_uris":["http://localhost/cb"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["http://example.com/cb"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["https://app.example.com/cb"]}"#, nil),
            (#"{"redirect_uris":["com.example.app:/cb#frag"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["/relative/cb"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["javascript:alert(1)"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["com.ex\u0430mple.app:/cb"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["https://user:pw@app.example.com/cb"]}"#, "invalid_redirect_uri"),
            (#"{"grant_types":["authorization_code"]}"#, "invalid_redirect_uri"),
            // web
            (#"{"application_type":"web","redirect_uris":["https://app.example.com/cb"]}"#, nil),
            (#"{"application_type":"web","redirect_uris":["http://app.example.com/cb"]}"#, "invalid_redirect_uri"),
            (#"{"application_type":"web","redirect_uris":["http://127.0.0.1/cb"]}"#, "invalid_redirect_uri"),
            // grant and response types
            (#"{"redirect_uris":["com.example.app:/cb"],"grant_types":["authorization_code","refresh_token"]}"#, nil),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"grant_types":["implicit"],"response_types":["token"]}"#,
                "invalid_client_metadata"
            ),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"grant_types":["authorization_code"],"response_types":["token"]}"#,
                "invalid_client_metadata"
            ),
            (#"{"redirect_uris":["com.example.app:/cb"],"grant_types":["refresh_token"]}"#, "invalid_client_metadata"),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"grant_types":["client_credentials"]}"#,
                "invalid_client_metadata"
            ),
            (#"{"redirect_uris":["com.example.app:/cb"],"grant_types":["password"]}"#, "invalid_client_metadata"),
            // auth methods
            (#"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"client_secret_post"}"#, nil),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"private_key_jwt"}"#,
                "invalid_client_metadata"
            ),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://app.example.com/jwks"}"#,
                nil
            ),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://a.example.com/j","jwks":{"keys":[{"kty":"EC"}]}}"#,
                "invalid_client_metadata"
            ),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"EC","d":"secret"}]}}"#,
                "invalid_client_metadata"
            ),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"tls_client_auth"}"#,
                "invalid_client_metadata"
            ),
            // scope (default policy: reject)
            (#"{"redirect_uris":["com.example.app:/cb"],"scope":"openid email"}"#, nil),
            (#"{"redirect_uris":["com.example.app:/cb"],"scope":"openid payments"}"#, "invalid_client_metadata"),
            (#"{"redirect_uris":["com.example.app:/cb"],"scope":"openid dcr"}"#, "invalid_client_metadata"),
            // bounded strings and types
            (#"{"redirect_uris":["com.example.app:/cb"],"client_name":"Fine"}"#, nil),
            (
                "{\"redirect_uris\":[\"com.example.app:/cb\"],\"client_name\":\"\(String(repeating: "x", count: 300))\"}",
                "invalid_client_metadata"
            ),
            (#"{"redirect_uris":["com.example.app:/cb"],"client_name":"evil\u202Etxt"}"#, "invalid_client_metadata"),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"logo_uri":"http://cdn.example.com/l.png"}"#,
                "invalid_client_metadata"
            ),
            (#"{"redirect_uris":"com.example.app:/cb"}"#, "invalid_client_metadata"),
            (#"{"redirect_uris":["com.example.app:/cb"],"dpop_bound_access_tokens":"yes"}"#, "invalid_client_metadata"),
            (
                #"{"redirect_uris":["com.example.app:/cb"],"software_statement":"e30.e30.sig"}"#,
                "invalid_software_statement"
            ),
        ] as [(String, String?)])
    func validationRule(body: String, expectedError: String?) async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let response = try await client.send(.post, "/t/\(h.tenant)/register", token: token, json: body)
            if let expectedError {
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.errorCode == expectedError, "\(body)")
                #expect(response.json["error_description"] is String)
            } else {
                #expect(response.status == .created, "\(body): \(String(buffer: response.body))")
            }
        }
    }

    @Test func trimPolicyRegistersTheAllowedSubset() async throws {
        let h = try await GatewayHarness.make(policy: #"{"disallowed_scope_behavior":"trim"}"#)
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let response = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token,
                json: #"{"redirect_uris":["com.example.app:/cb"],"scope":"openid payments admin profile"}"#)
            #expect(response.status == .created)
            #expect(response.json["scope"] as? String == "openid profile")
        }
    }

    @Test func badUserTokensAre401WithAChallenge() async throws {
        let h = try await GatewayHarness.make()
        let other = try await GatewayHarness.make()
        let bad: [String] = [
            try await h.dcrToken(expiresIn: -120),
            try await h.dcrToken(audience: "https://elsewhere.example.com/register"),
            try await h.dcrToken(scope: "openid profile"),
            try await h.dcrToken(issuer: "\(GatewayHarness.tokenServiceURL)/t/\(other.tenant)"),
            try await h.dcrToken(signingTenant: other.tenant),
            try await h.dcrToken(sub: UUID().uuidString),
            try await h.dcrToken(sub: "not-a-uuid"),
            "a.b.c", "not-a-jwt-and-no-iat",
        ]
        try await GatewayHarness.withApp { client in
            for token in bad {
                let response = try await client.send(.post, "/t/\(h.tenant)/register", token: token, json: Self.native)
                #expect(response.status == .unauthorized, "\(token)")
                #expect(response.errorCode == "invalid_token")
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer error=\"invalid_token\"") == true)
            }
            let missing = try await client.send(.post, "/t/\(h.tenant)/register", json: Self.native)
            #expect(missing.status == .unauthorized)
            #expect(missing.errorCode == "invalid_token")
            var headers: HTTPFields = [.contentType: "application/json", .authorization: "Basic Zm9vOmJhcg=="]
            let basic = try await client.execute(
                uri: "/t/\(h.tenant)/register", method: .post, headers: headers,
                body: ByteBuffer(string: Self.native)
            ) { $0 }
            #expect(basic.status == .unauthorized)
            headers[.authorization] = "Bearer tok\u{0435}n"
            let unicode = try await client.execute(
                uri: "/t/\(h.tenant)/register", method: .post, headers: headers,
                body: ByteBuffer(string: Self.native)
            ) { $0 }
            #expect(unicode.status == .unauthorized)
        }
        #expect(try await h.outboxPayloads(.clientRegistered).isEmpty)
    }

    @Test func hostileBodiesAre4xxWithAnRFCError() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        let manyURIs = "[" + Array(repeating: "\"com.example.app:/cb\"", count: 500).joined(separator: ",") + "]"
        try await GatewayHarness.withApp { client in
            let cases: [(String, String, HTTPResponse.Status)] = [
                ("{not json", "application/json", .badRequest),
                ("[1,2,3]", "application/json", .badRequest),
                ("", "application/json", .badRequest),
                ("{\"jwks\":\(deep)}", "application/json", .badRequest),
                ("{\"redirect_uris\":\(manyURIs)}", "application/json", .badRequest),
                (Self.native, "text/plain", .unsupportedMediaType),
                (
                    "{\"client_name\":\"\(String(repeating: "a", count: 1 << 20))\"}", "application/json",
                    .contentTooLarge
                ),
                // U+0000 cannot be stored by PostgreSQL: refused wherever it is, even in an ignored field.
                (
                    Self.native.replacingOccurrences(of: "Example", with: #"Ex\u0000ample"#), "application/json",
                    .badRequest
                ),
                (#"{"redirect_uris":["com.example.app:/callback"],"x\u0000":1}"#, "application/json", .badRequest),
                (
                    #"{"redirect_uris":["com.example.app:/callback"],"jwks":{"keys":[{"kty":"\u0000"}]}}"#,
                    "application/json", .badRequest
                ),
            ]
            for (body, contentType, status) in cases {
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", token: token, json: body, contentType: contentType)
                #expect(response.status == status, "\(body.prefix(40))")
                #expect(response.errorCode != nil)
            }
            let unknownTenant = try await client.send(
                .post, "/t/no-such-tenant-xyz/register", token: token, json: Self.native)
            #expect(unknownTenant.status == .notFound)
            let badSlug = try await client.send(.post, "/t/BAD%20SLUG/register", token: token, json: Self.native)
            #expect(badSlug.status == .notFound)
        }
    }

    @Test func maxClientsPerUserHoldsUnderConcurrency() async throws {
        // The per-source rate limit is raised so only max_clients_per_user decides (router tests share one source).
        let h = try await GatewayHarness.make(
            policy: #"{"max_clients_per_user":5,"rate_limits":{"registration":{"per_source_per_minute":100}}}"#)
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await client.send(.post, "/t/\(h.tenant)/register", token: token, json: Self.native).status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            // Each registration at the limit expires the user's least recently used client to make room.
            #expect(statuses.filter { $0 == .created }.count == 50)
        }
        #expect(try await IdempotentRegistrationTests.clients(of: h.user, h) == (active: 5, all: 50))
        #expect(try await h.outboxPayloads(.clientRegistered).count == 50)
        #expect(try await h.outboxPayloads(.clientRevoked).count == 45)
    }
}
