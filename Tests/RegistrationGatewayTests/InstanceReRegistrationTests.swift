import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// A user's app instance is the key its registration proves (DPoP): registering again from it returns its
/// client; a reinstall that lost the key is a new instance, and at `max_clients_per_user` the least recently
/// used client makes room.
@Suite struct InstanceReRegistrationTests {
    static let native = RegistrationEndpointTests.native
    static let dpop = HTTPField.Name("DPoP")!

    static func register(
        _ client: some TestClientProtocol, _ h: GatewayHarness, token: String, key: DPoPProofSigner?,
        json: String = native
    ) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let key {
            headers[dpop] = try key.proof(
                method: "POST", url: "\(GatewayHarness.publicURL)/t/\(h.tenant)/register", accessToken: token)
        }
        return try await client.send(.post, "/t/\(h.tenant)/register", token: token, json: json, headers: headers)
    }

    @Test func theSameInstanceGetsItsClientBackWithNewCredentials() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        let instance = DPoPProofSigner(key: try SigningKey.generate(.es256))
        try await GatewayHarness.withApp { client in
            let first = try await Self.register(client, h, token: token, key: instance)
            #expect(first.status == .created)
            let again = try await Self.register(client, h, token: token, key: instance)
            #expect(again.status == .created)
            let clientID = try #require(first.json["client_id"] as? String)
            #expect(again.json["client_id"] as? String == clientID)
            let oldToken = try #require(first.json["registration_access_token"] as? String)
            #expect(again.json["registration_access_token"] as? String != oldToken)
            #expect(
                try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: oldToken).status
                    == .unauthorized)

            // Another key (a reinstall that lost its key) is another instance.
            let reinstall = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let other = try await Self.register(client, h, token: token, key: reinstall)
            #expect(other.status == .created)
            #expect(other.json["client_id"] as? String != clientID)
        }
        #expect(try await IdempotentRegistrationTests.clients(of: h.user, h).all == 2)
        #expect(try await h.outboxPayloads(.clientRegistered).count == 2)
        #expect(try await h.outboxPayloads(.clientUpdated).count == 1)
    }

    @Test func aBoundDCRTokenIdentifiesTheInstanceByItsProof() async throws {
        let h = try await GatewayHarness.make()
        let instance = DPoPProofSigner(key: try SigningKey.generate(.es256))
        try await GatewayHarness.withApp { client in
            var ids: [String?] = []
            for _ in 0..<2 {
                let token = try await h.dcrToken(boundTo: instance.jkt)
                let proof = try instance.proof(
                    method: "POST", url: "\(GatewayHarness.publicURL)/t/\(h.tenant)/register", accessToken: token)
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", json: Self.native,
                    headers: [.authorization: "DPoP \(token)", Self.dpop: proof])
                #expect(response.status == .created)
                ids.append(response.json["client_id"] as? String)
            }
            #expect(ids[0] != nil && ids[0] == ids[1])
        }
    }

    @Test func keysMerelySentAsMetadataDoNotIdentifyAnInstance() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        let key = try SigningKey.generate(.es256)
        let jwks = String(decoding: try LatchkeyJSON.encode(JWKSet(keys: [key.publicJWK(kid: "k1")])), as: UTF8.self)
        let body =
            #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":"#
            + jwks + "}"
        try await GatewayHarness.withApp { client in
            let first = try await Self.register(client, h, token: token, key: nil, json: body)
            let second = try await Self.register(client, h, token: token, key: nil, json: body)
            #expect(first.status == .created && second.status == .created)
            #expect(first.json["client_id"] as? String != second.json["client_id"] as? String)
        }
    }

    @Test func anInstanceBelongsToItsUser() async throws {
        let h = try await GatewayHarness.make()
        let bob = try await h.addUser()
        let instance = DPoPProofSigner(key: try SigningKey.generate(.es256))
        try await GatewayHarness.withApp { client in
            let alice = try await Self.register(client, h, token: try await h.dcrToken(), key: instance)
            let other = try await Self.register(
                client, h, token: try await h.dcrToken(sub: bob.uuidString), key: instance)
            #expect(alice.status == .created && other.status == .created)
            #expect(alice.json["client_id"] as? String != other.json["client_id"] as? String)
        }
    }

    @Test func aBadProofWithABearerTokenIsRefused() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        let key = DPoPProofSigner(key: try SigningKey.generate(.es256))
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let wrongURL = try key.proof(method: "POST", url: "https://evil.example/register", accessToken: token)
            let otherToken = try key.proof(
                method: "POST", url: "\(GatewayHarness.publicURL)\(path)", accessToken: "another-token")
            for proof in [wrongURL, otherToken, "not-a-proof"] {
                let response = try await client.send(
                    .post, path, token: token, json: Self.native, headers: [Self.dpop: proof])
                #expect(response.status == .unauthorized)
                #expect(response.errorCode == "invalid_dpop_proof")
            }
            let proof = try key.proof(method: "POST", url: "\(GatewayHarness.publicURL)\(path)", accessToken: token)
            let first = try await client.send(.post, path, token: token, json: Self.native, headers: [Self.dpop: proof])
            #expect(first.status == .created)
            let replayed = try await client.send(
                .post, path, token: token, json: Self.native, headers: [Self.dpop: proof])
            #expect(replayed.status == .unauthorized, "a replayed proof claimed the instance")
        }
        #expect(try await IdempotentRegistrationTests.clients(of: h.user, h).all == 1)
    }

    @Test func atTheLimitTheLeastRecentlyUsedClientIsExpired() async throws {
        let h = try await GatewayHarness.make(policy: #"{"max_clients_per_user":2}"#)
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let lost = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let first = try await Self.register(client, h, token: token, key: lost)
            let second = try await Self.register(client, h, token: token, key: nil)
            let firstID = try #require(first.json["client_id"] as? String)
            let secondID = try #require(second.json["client_id"] as? String)
            // The newer client has not been used since; the older one has, so the newer one is the stalest.
            try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        "UPDATE clients SET last_used_at = now() WHERE client_id = \(firstID)", logger: database.logger)
                    try await connection.query(
                        "UPDATE clients SET created_at = now() - interval '1 hour' WHERE client_id = \(secondID)",
                        logger: database.logger)
                }
            }
            let third = try await Self.register(client, h, token: token, key: nil)
            #expect(third.status == .created)
            #expect(try await ClientExpiryTests.state(h, secondID).client == "expired")
            #expect(try await ClientExpiryTests.state(h, firstID).client == "active")
            let events = try await h.outboxPayloads(.clientRevoked)
                .map { try CloudEvent<ClientRevoked>.decode(from: Data($0.utf8)).data }
            #expect(events.map(\.clientID) == [secondID])
            #expect(events.first?.reason == .expired)
            #expect(events.first?.actor == .user(h.user))
            // Re-registering an existing instance makes no new client, so nothing more is expired.
            let back = try await Self.register(client, h, token: token, key: lost)
            #expect(back.json["client_id"] as? String == firstID)
            #expect(try await h.outboxPayloads(.clientRevoked).count == 1)
        }
        #expect(try await IdempotentRegistrationTests.clients(of: h.user, h).active == 2)
    }
}
