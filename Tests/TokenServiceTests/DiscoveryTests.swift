import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import Testing

@testable import TokenService

@Suite struct DiscoveryTests {
    @Test func bothDiscoveryURLsServeEveryRequiredMember() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let paths = [
                "/t/\(fixture.tenant)/.well-known/openid-configuration",
                "/.well-known/oauth-authorization-server/t/\(fixture.tenant)",
            ]
            var documents: [[String: Any]] = []
            for path in paths {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .ok)
                    documents.append(TokenRequest.json(response))
                }
            }
            for document in documents {
                #expect(document["issuer"] as? String == fixture.issuer)
                #expect(document["token_endpoint"] as? String == "\(fixture.issuer)/token")
                #expect(document["authorization_endpoint"] as? String == "\(fixture.issuer)/authorize")
                #expect(document["jwks_uri"] as? String == "\(fixture.issuer)/jwks")
                #expect(document["revocation_endpoint"] as? String == "\(fixture.issuer)/revoke")
                #expect(document["introspection_endpoint"] as? String == "\(fixture.issuer)/introspect")
                #expect(document["userinfo_endpoint"] as? String == "\(fixture.issuer)/userinfo")
                #expect(
                    document["registration_endpoint"] as? String
                        == "\(TokenServiceHarness.gatewayURL)/t/\(fixture.tenant)/register")
                #expect(document["code_challenge_methods_supported"] as? [String] == ["S256"])
                #expect((document["dpop_signing_alg_values_supported"] as? [String])?.contains("ES256") == true)
                #expect(
                    document["token_endpoint_auth_methods_supported"] as? [String]
                        == ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"])
                #expect(
                    Set(document["grant_types_supported"] as? [String] ?? [])
                        == ["authorization_code", "refresh_token", "client_credentials"])
                #expect(document["authorization_response_iss_parameter_supported"] as? Bool == true)
                #expect(document["response_types_supported"] as? [String] == ["code"])
            }
        }
    }

    @Test func unknownAndMalformedTenantsAre404JSON() async throws {
        try await TokenServiceHarness.run { client, _ in
            for path in [
                "/t/no-such-tenant-\(UUID().uuidString.prefix(8).lowercased())/.well-known/openid-configuration",
                "/.well-known/oauth-authorization-server/t/NOT_A_SLUG",
                "/t/%00bad/jwks",
            ] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .notFound, "\(path)")
                    #expect(response.headers[.contentType] == "application/json")
                }
            }
        }
    }

    @Test func jwksCreatesTheFirstKeyOnceAndPublishesOnlyPublicMembers() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let first = try await fixture.jwks(client)
            let second = try await fixture.jwks(client)
            #expect(first.keys.count == 1)
            #expect(first == second)
            #expect(first.keys[0].alg == "ES256")
            #expect(!first.keys[0].hasPrivateMembers)
            try await client.execute(uri: "/t/\(fixture.tenant)/jwks", method: .get) { response in
                #expect(response.headers[.contentType] == "application/jwk-set+json")
                #expect(!String(buffer: response.body).contains("\"d\""))
            }
        }
    }

    @Test func rotationPublishesBeforeSigningAndKeepsTheOldKey() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try await fixture.insertClient("svc", scope: "api")
            let store = TenantKeyStore(
                keys: TenantSigningKeys(envelope: fixture.settings.keyEnvelope), database: fixture.database)
            let rotation = SigningKeyRotation(keys: store.keys, database: fixture.database)
            let old = try await store.signingKey(tenant: fixture.tenant).kid
            let staged = try await rotation.rotate(tenant: fixture.tenant, algorithm: nil, actor: "test").key
            #expect(Set(try await fixture.jwks(client).keys.compactMap(\.kid)) == [old, staged.kid])
            // Staged keys do not sign yet.
            #expect(try await ClientCredentials.token(client, fixture, "svc", secret!).kid == old)
            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .zero).activated == staged.kid)
            _ = try await KeyRotationTests.firstTokenSignedBy(staged.kid, client, fixture, "svc", secret!)
            #expect(Set(try await fixture.jwks(client).keys.compactMap(\.kid)) == [old, staged.kid])
            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .zero).activated == nil)
        }
    }
}

/// A client_credentials grant for tests that only need some token.
enum ClientCredentials {
    struct Issued {
        let accessToken: String
        let kid: String?
    }

    static func token(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, _ clientID: String, _ secret: String
    ) async throws -> Issued {
        try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: (clientID, secret)),
            body: TokenRequest.form([("grant_type", "client_credentials")])
        ) { response in
            #expect(response.status == .ok)
            let token = try #require(TokenRequest.json(response)["access_token"] as? String)
            return Issued(accessToken: token, kid: try CompactJWS(parsing: token).header.kid)
        }
    }
}
