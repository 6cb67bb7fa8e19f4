import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationMechanismTests {
    @Test func initialAccessTokensAreCountedExpiredAndRevocable() async throws {
        let h = try await GatewayHarness.make()
        let twice = try await h.createInitialAccessToken(uses: 2)
        let expired = try await h.createInitialAccessToken(expiresIn: -10)
        let revoked = try await h.createInitialAccessToken(revoked: true)
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let first = try await client.send(.post, path, token: twice, json: RegistrationEndpointTests.native)
            #expect(first.status == .created)
            // A refused registration does not use up a count.
            let refused = try await client.send(
                .post, path, token: twice, json: #"{"redirect_uris":["http://localhost/cb"]}"#)
            #expect(refused.errorCode == "invalid_redirect_uri")
            #expect(
                try await client.send(.post, path, token: twice, json: RegistrationEndpointTests.native).status
                    == .created)
            for token in [twice, expired, revoked, SecretTokens.generate(prefix: "lk_iat_")] {
                let response = try await client.send(.post, path, token: token, json: RegistrationEndpointTests.native)
                #expect(response.status == .unauthorized)
                #expect(response.errorCode == "invalid_token")
            }
        }
        let events = try await h.outboxPayloads(.clientRegistered)
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.contains("\"initial_access_token\"") && !$0.contains(twice) })
    }

    @Test func mechanismsFollowThePolicy() async throws {
        let open = try await GatewayHarness.make(policy: #"{"registration_mechanisms":["open"]}"#)
        let closed = try await GatewayHarness.make(policy: #"{"registration_mechanisms":["initial_access_token"]}"#)
        let userToken = try await closed.dcrToken()
        try await GatewayHarness.withApp { client in
            let anonymous = try await client.send(
                .post, "/t/\(open.tenant)/register", json: RegistrationEndpointTests.native)
            #expect(anonymous.status == .created)
            #expect(
                try await client.send(.post, "/t/\(closed.tenant)/register", json: RegistrationEndpointTests.native)
                    .status == .unauthorized)
            let refusedUser = try await client.send(
                .post, "/t/\(closed.tenant)/register", token: userToken, json: RegistrationEndpointTests.native)
            #expect(refusedUser.status == .unauthorized)
            #expect(refusedUser.errorCode == "invalid_token")
        }
        #expect(try await open.outboxPayloads(.clientRegistered).first?.contains("\"open\"") == true)
    }

    @Test func templatizedRegistrationCopiesTheTemplateAndRefusesForbiddenOverrides() async throws {
        let h = try await GatewayHarness.make()
        try await h.createTemplate(
            "mobile-app",
            metadata:
                #"{"redirect_uris":["com.example.mobile:/cb"],"client_name":"Mobile","scope":"openid profile","grant_types":["authorization_code","refresh_token"]}"#,
            overridable: ["client_name"])
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let plain = try await client.send(.post, path, token: token, json: #"{"software_id":"mobile-app"}"#)
            #expect(plain.status == .created)
            #expect(plain.json["redirect_uris"] as? [String] == ["com.example.mobile:/cb"])
            #expect(plain.json["grant_types"] as? [String] == ["authorization_code", "refresh_token"])
            #expect(plain.json["software_id"] as? String == "mobile-app")
            let named = try await client.send(
                .post, path, token: token, json: #"{"software_id":"mobile-app","client_name":"Alice's phone"}"#)
            #expect(named.json["client_name"] as? String == "Alice's phone")
            let forbidden = try await client.send(
                .post, path, token: token,
                json: #"{"software_id":"mobile-app","redirect_uris":["com.evil.app:/cb"]}"#)
            #expect(forbidden.status == .badRequest)
            #expect(forbidden.errorCode == "invalid_client_metadata")
        }
        let events = try await h.outboxPayloads(.clientRegistered)
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.contains("\"template_id\":\"mobile-app\"") })
    }
}
