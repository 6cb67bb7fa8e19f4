import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// Upstream providers' credentials on the admin API: Apple's client-secret JWT key and `private_key_jwt`
/// keys are sealed and never returned; the `private_key_jwt` public key is shown to register upstream;
/// bad settings are `invalid_request`.
@Suite struct AdminUpstreamCredentialTests {
    func adminToken(_ h: GatewayHarness) async throws -> String {
        try await h.dcrToken(sub: "admin-client", scope: "admin", audience: "https://admin.latchkey.test")
    }

    /// PKCS#8 PEM, as Apple ships `.p8` files.
    static func pem(_ key: SigningKey) -> String {
        let base64 = key.pkcs8DERRepresentation.base64EncodedString()
        var lines: [String] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        return "-----BEGIN PRIVATE KEY-----\n" + lines.joined(separator: "\n") + "\n-----END PRIVATE KEY-----\n"
    }

    static func policy(_ provider: [String: Any]) throws -> String {
        var entry: [String: Any] = [
            "id": "apple", "display_name": "Apple", "issuer": "https://appleid.apple.com",
            "client_id": "com.example.latchkey", "scopes": ["openid", "name", "email"],
        ]
        entry.merge(provider) { _, new in new }
        let data = try JSONSerialization.data(withJSONObject: ["upstream_identity_providers": [entry]])
        return String(decoding: data, as: UTF8.self)
    }

    static func storedKinds(_ h: GatewayHarness) async throws -> [String] {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                var kinds: [String] = []
                let rows = try await connection.query(
                    "SELECT kind FROM upstream_client_secrets ORDER BY provider_id", logger: database.logger)
                for try await kind in rows.decode(String.self) { kinds.append(kind) }
                return kinds
            }
        }
    }

    static func provider(_ response: TestResponse) -> [String: Any]? {
        ((response.json["policy"] as? [String: Any])?["upstream_identity_providers"] as? [[String: Any]])?.first
    }

    @Test func appleClientSecretKeyIsSealedAndNeverReturned() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let key = try SigningKey.generate(.es256)
        let pem = Self.pem(key)
        let body = try Self.policy([
            "response_mode": "form_post", "token_endpoint_auth_method": "client_secret_post",
            "client_secret_jwt": ["key_id": "ABC123DEFG", "team_id": "TEAM123456", "private_key": pem],
        ])
        try await GatewayHarness.withApp(keyRotation: true) { client in
            let put = try await client.send(.put, "/admin/tenants/\(h.tenant)/policy", token: admin, json: body)
            #expect(put.status == .ok, "\(String(buffer: put.body))")
            let read = try await client.send(.get, "/admin/tenants/\(h.tenant)", token: admin)
            let text = String(buffer: read.body)
            #expect(!text.contains("PRIVATE KEY") && !text.contains("private_key"), "\(text)")
            let provider = try #require(Self.provider(read))
            #expect(provider["response_mode"] as? String == "form_post")
            #expect(provider["token_endpoint_auth_method"] as? String == "client_secret_post")
            let jwt = try #require(provider["client_secret_jwt"] as? [String: Any])
            #expect(jwt["key_id"] as? String == "ABC123DEFG" && jwt["team_id"] as? String == "TEAM123456")
            #expect(try await Self.storedKinds(h) == ["client_secret_jwt_key"])

            // The policy read back is written back unchanged: the sealed key stays.
            let again = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/policy", token: admin,
                json: String(
                    decoding: try JSONSerialization.data(withJSONObject: read.json["policy"] as Any), as: UTF8.self))
            #expect(again.status == .ok, "\(String(buffer: again.body))")
            #expect(try await Self.storedKinds(h) == ["client_secret_jwt_key"])

            // Switching to a fixed client secret without giving one is refused: the key is no secret.
            let switched = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/policy", token: admin, json: try Self.policy([:]))
            #expect(switched.status == .badRequest)
            #expect(
                switched.json["error_description"] as? String
                    == "upstream_identity_providers[0].client_secret is required")
        }
    }

    @Test func privateKeyJWTShowsThePublicKeyToRegisterUpstream() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let key = try SigningKey.generate(.es256)
        try await GatewayHarness.withApp(keyRotation: true) { client in
            let put = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/policy", token: admin,
                json: try Self.policy([
                    "token_endpoint_auth_method": "private_key_jwt", "private_key_jwt": ["private_key": Self.pem(key)],
                ]))
            #expect(put.status == .ok, "\(String(buffer: put.body))")
            let read = try await client.send(.get, "/admin/tenants/\(h.tenant)", token: admin)
            #expect(!String(buffer: read.body).contains("PRIVATE KEY"))
            let settings = try #require(Self.provider(read)?["private_key_jwt"] as? [String: Any])
            let jwk = try #require(settings["public_jwk"] as? [String: Any])
            let thumbprint = try key.publicJWK().thumbprint()
            #expect(settings["key_id"] as? String == thumbprint && jwk["kid"] as? String == thumbprint)
            #expect(jwk["kty"] as? String == "EC" && jwk["alg"] as? String == "ES256" && jwk["d"] == nil)
            #expect(jwk["x"] as? String == key.publicJWK().x)
            #expect(try await Self.storedKinds(h) == ["private_key_jwt_key"])

            // Kept key, new key id: the public key stays, under the new id; a public_jwk sent is ignored.
            let renamed = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/policy", token: admin,
                json: try Self.policy([
                    "token_endpoint_auth_method": "private_key_jwt",
                    "private_key_jwt": [
                        "key_id": "k2", "public_jwk": ["kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"],
                    ],
                ]))
            #expect(renamed.status == .ok, "\(String(buffer: renamed.body))")
            let kept = try #require(Self.provider(renamed)?["private_key_jwt"] as? [String: Any])
            #expect((kept["public_jwk"] as? [String: Any])?["kid"] as? String == "k2")
            #expect((kept["public_jwk"] as? [String: Any])?["x"] as? String == key.publicJWK().x)
        }
    }

    @Test func badUpstreamCredentialSettingsAreInvalidRequests() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let p256 = Self.pem(try SigningKey.generate(.es256))
        let rsa = Self.pem(try SigningKey.generate(.rs256))
        let apple: [String: Any] = ["key_id": "ABC123DEFG", "team_id": "TEAM123456", "private_key": p256]
        let cases: [(String, [String: Any])] = [
            ("client_secret_jwt.private_key", ["client_secret_jwt": apple.merging(["private_key": rsa]) { _, n in n }]),
            (
                "client_secret_jwt.private_key",
                ["client_secret_jwt": apple.merging(["private_key": "not a key"]) { _, n in n }]
            ),
            ("client_secret_jwt.key_id", ["client_secret_jwt": apple.merging(["key_id": "a b"]) { _, n in n }]),
            ("team_id", ["client_secret_jwt": ["key_id": "ABC123DEFG", "private_key": p256]]),
            ("client_secret_jwt", ["client_secret_jwt": apple, "client_secret": "s"]),
            (
                "client_secret_jwt",
                [
                    "client_secret_jwt": apple, "token_endpoint_auth_method": "private_key_jwt",
                    "private_key_jwt": ["private_key": p256],
                ]
            ),
            ("unknown_member", ["client_secret_jwt": apple.merging(["unknown_member": 1]) { _, n in n }]),
            ("private_key_jwt", ["token_endpoint_auth_method": "private_key_jwt"]),
            ("private_key_jwt", ["private_key_jwt": ["private_key": p256], "client_secret": "s"]),
            (
                "private_key_jwt.private_key",
                [
                    "token_endpoint_auth_method": "private_key_jwt",
                    "private_key_jwt": ["private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"],
                ]
            ),
            ("token_endpoint_auth_method", ["token_endpoint_auth_method": "client_secret_jwt", "client_secret": "s"]),
            ("response_mode", ["response_mode": "fragment", "client_secret": "s"]),
        ]
        let bodies = try cases.map { ($0.0, try Self.policy($0.1)) }
        try await GatewayHarness.withApp(keyRotation: true) { client in
            for (member, body) in bodies {
                let response = try await client.send(
                    .put, "/admin/tenants/\(h.tenant)/policy", token: admin, json: body)
                let description = response.json["error_description"] as? String ?? ""
                #expect(response.status == .badRequest, "\(member): \(String(buffer: response.body))")
                #expect(response.errorCode == "invalid_request")
                #expect(description.contains(member), "\(member): \(description)")
                #expect(!description.contains("PRIVATE KEY") && !description.contains("BEGIN"))
            }
            #expect(try await Self.storedKinds(h).isEmpty)
        }
    }
}
