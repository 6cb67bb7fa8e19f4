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

@Suite struct ClientConfigurationTests {
    /// Registers a client and returns (client_id, client_secret, registration_access_token).
    static func register(_ client: any TestClientProtocol, _ h: GatewayHarness) async throws -> (String, String, String)
    {
        let response = try await client.send(
            .post, "/t/\(h.tenant)/register", token: try await h.dcrToken(),
            json: RegistrationEndpointTests.native)
        #expect(response.status == .created)
        let body = response.json
        return (
            try #require(body["client_id"] as? String), try #require(body["client_secret"] as? String),
            try #require(body["registration_access_token"] as? String)
        )
    }

    @Test func readReturnsMetadataWithoutSecrets() async throws {
        let h = try await GatewayHarness.make()
        let other = try await GatewayHarness.make()
        try await GatewayHarness.withApp { client in
            let (clientID, secret, token) = try await Self.register(client, h)
            let read = try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: token)
            #expect(read.status == .ok)
            #expect(read.headers[.cacheControl] == "no-store")
            #expect(read.json["client_id"] as? String == clientID)
            #expect(read.json["client_name"] as? String == "Example")
            #expect(read.json["client_secret"] == nil)
            #expect(read.json["registration_access_token"] == nil)
            #expect(!String(buffer: read.body).contains(secret))
            // Wrong token, no token, another client's path, another tenant: all the same 401.
            let (otherID, _, _) = try await Self.register(client, h)
            for (path, bearer) in [
                ("/t/\(h.tenant)/register/\(clientID)", SecretTokens.generate(prefix: "lk_rat_")),
                ("/t/\(h.tenant)/register/\(otherID)", token),
                ("/t/\(other.tenant)/register/\(clientID)", token),
                ("/t/\(h.tenant)/register/no-such-client", token),
            ] {
                let response = try await client.send(.get, path, token: bearer)
                #expect(response.status == .unauthorized, "\(path)")
                #expect(response.errorCode == "invalid_token")
                #expect(response.headers[.wwwAuthenticate] != nil)
            }
            let missing = try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)")
            #expect(missing.status == .unauthorized)
        }
    }

    @Test func putReplacesMetadataRotatesTheTokenAndEmitsClientUpdated() async throws {
        let h = try await GatewayHarness.make()
        try await GatewayHarness.withApp { client in
            let (clientID, secret, token) = try await Self.register(client, h)
            let body =
                #"{"client_id":"\#(clientID)","client_secret":"\#(secret)","redirect_uris":["com.example.app:/cb2"],"client_name":"Renamed","scope":"openid"}"#
            let put = try await client.send(.put, "/t/\(h.tenant)/register/\(clientID)", token: token, json: body)
            #expect(put.status == .ok, "\(String(buffer: put.body))")
            #expect(put.json["client_name"] as? String == "Renamed")
            #expect(put.json["redirect_uris"] as? [String] == ["com.example.app:/cb2"])
            let rotated = try #require(put.json["registration_access_token"] as? String)
            #expect(rotated != token)
            #expect(
                try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: token).status == .unauthorized
            )
            #expect(try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: rotated).status == .ok)
            let events = try await h.outboxPayloads(.clientUpdated)
            #expect(events.count == 1)
            let event = try CloudEvent<ClientUpdated>.decode(from: Data(try #require(events.first).utf8))
            #expect(event.data.changedFields == ["client_name", "redirect_uris", "scope"])
            #expect(event.data.registrationTokenRotated)
            #expect(!events[0].contains(rotated) && !events[0].contains(secret))
            // Same rules as registration; mismatching client_id or secret refused.
            let invalid = try await client.send(
                .put, "/t/\(h.tenant)/register/\(clientID)", token: rotated,
                json: #"{"client_id":"\#(clientID)","redirect_uris":["http://localhost/cb"]}"#)
            #expect(invalid.errorCode == "invalid_redirect_uri")
            let wrongID = try await client.send(
                .put, "/t/\(h.tenant)/register/\(clientID)", token: rotated,
                json: #"{"client_id":"other","redirect_uris":["com.example.app:/cb"]}"#)
            #expect(wrongID.errorCode == "invalid_client_metadata")
            let wrongSecret = try await client.send(
                .put, "/t/\(h.tenant)/register/\(clientID)", token: rotated,
                json: #"{"client_id":"\#(clientID)","client_secret":"nope","redirect_uris":["com.example.app:/cb"]}"#)
            #expect(wrongSecret.errorCode == "invalid_client_metadata")
        }
    }

    @Test func putKeepsTheTokenWhenPolicyDoesNotRotate() async throws {
        let h = try await GatewayHarness.make(policy: #"{"rotate_registration_access_token":false}"#)
        try await GatewayHarness.withApp { client in
            let (clientID, _, token) = try await Self.register(client, h)
            let put = try await client.send(
                .put, "/t/\(h.tenant)/register/\(clientID)", token: token,
                json: #"{"client_id":"\#(clientID)","redirect_uris":["com.example.app:/cb"]}"#)
            #expect(put.status == .ok)
            #expect(put.json["registration_access_token"] == nil)
            #expect(try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: token).status == .ok)
        }
    }

    @Test func deleteDeregistersRevokesRefreshTokensAndEmitsClientRevoked() async throws {
        let h = try await GatewayHarness.make()
        try await GatewayHarness.withApp { client in
            let (clientID, _, token) = try await Self.register(client, h)
            try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        """
                        INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, client_id, user_id, scope, expires_at)
                        VALUES (\(h.tenant), 'rt-hash-1', \(UUID()), \(clientID), \(h.user), 'openid', now() + interval '1 day')
                        """, logger: database.logger)
                    // An access token issued under an earlier, longer lifetime outlives the policy's 600 s.
                    try await connection.query(
                        """
                        INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, expires_at)
                        VALUES (\(h.tenant), \(UUID().uuidString), \(clientID), \(h.user), now() + interval '2 hours')
                        """, logger: database.logger)
                }
            }
            let other = try await GatewayHarness.make()
            #expect(
                try await client.send(.delete, "/t/\(other.tenant)/register/\(clientID)", token: token).status
                    == .unauthorized)
            let delete = try await client.send(.delete, "/t/\(h.tenant)/register/\(clientID)", token: token)
            #expect(delete.status == .noContent)
            #expect(
                try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: token).status == .unauthorized
            )
            #expect(
                try await client.send(.delete, "/t/\(h.tenant)/register/\(clientID)", token: token).status
                    == .unauthorized)
            let state = try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection -> (String, String, String?)? in
                    let rows = try await connection.query(
                        """
                        SELECT c.status, r.status, r.revoke_reason FROM clients c
                        JOIN refresh_tokens r ON r.tenant_id = c.tenant_id AND r.client_id = c.client_id
                        WHERE c.client_id = \(clientID)
                        """, logger: database.logger)
                    for try await row in rows.decode((String, String, String?).self) { return row }
                    return nil
                }
            }
            #expect(state?.0 == "deleted")
            #expect(state?.1 == "revoked")
            #expect(state?.2 == "deregistered")
            let events = try await h.outboxPayloads(.clientRevoked)
            #expect(events.count == 1)
            let event = try CloudEvent<ClientRevoked>.decode(from: Data(try #require(events.first).utf8))
            #expect(event.data.reason == .deregistered)
            #expect(event.data.clientID == clientID)
            #expect(!events[0].contains(token))
            let expiry = try #require(
                event.data.accessTokensExpireAt, "ClientRevoked does not say when the client's tokens expire")
            #expect(expiry.timeIntervalSince(event.data.revokedAt) > 7_100, "the token on record counts: \(expiry)")
        }
    }
}
