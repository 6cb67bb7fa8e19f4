import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// `Idempotency-Key` on `POST /register`: retries of one request make one client.
@Suite struct IdempotentRegistrationTests {
    static let native = RegistrationEndpointTests.native
    static let confidential =
        #"{"redirect_uris":["com.example.app:/callback"],"token_endpoint_auth_method":"client_secret_basic"}"#

    static func keyed(_ key: String) -> HTTPFields {
        [IdempotencyKey.header: key]
    }

    /// Active and total clients of `user` in the harness tenant.
    static func clients(of user: UUID, _ h: GatewayHarness) async throws -> (active: Int, all: Int) {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    """
                    SELECT count(*) FILTER (WHERE status = 'active')::int, count(*)::int FROM clients
                    WHERE authenticated_user = \(user)
                    """, logger: database.logger)
                for try await counts in rows.decode((Int, Int).self) { return counts }
                return (0, 0)
            }
        }
    }

    @Test func aRetryGetsTheSameClientWithFreshCredentials() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let first = try await client.send(
                .post, path, token: token, json: Self.confidential, headers: Self.keyed("install-1"))
            #expect(first.status == .created)
            let retry = try await client.send(
                .post, path, token: token, json: Self.confidential, headers: Self.keyed("install-1"))
            #expect(retry.status == .created)
            #expect(retry.headers[.cacheControl] == "no-store")
            let clientID = try #require(first.json["client_id"] as? String)
            #expect(retry.json["client_id"] as? String == clientID)
            let (secret1, secret2) = (first.json["client_secret"] as? String, retry.json["client_secret"] as? String)
            #expect(secret1 != nil && secret2 != nil && secret1 != secret2)
            let oldToken = try #require(first.json["registration_access_token"] as? String)
            let newToken = try #require(retry.json["registration_access_token"] as? String)
            #expect(oldToken != newToken)
            #expect(retry.json["client_id_issued_at"] as? Int == first.json["client_id_issued_at"] as? Int)
            // Only the newest credentials work: nothing of the first answer was kept to repeat it.
            #expect(try await client.send(.get, "\(path)/\(clientID)", token: oldToken).status == .unauthorized)
            #expect(try await client.send(.get, "\(path)/\(clientID)", token: newToken).status == .ok)
        }
        let counts = try await Self.clients(of: h.user, h)
        #expect(counts.all == 1)
        #expect(try await h.outboxPayloads(.clientRegistered).count == 1)
        let updates = try await h.outboxPayloads(.clientUpdated)
            .map { try CloudEvent<ClientUpdated>.decode(from: Data($0.utf8)).data }
        #expect(updates.count == 1)
        #expect(updates.first?.secretRotated == true && updates.first?.registrationTokenRotated == true)
        #expect(updates.first?.changedFields == [])
        for payload in try await h.outboxPayloads(.clientUpdated) { #expect(!payload.contains("lk_cs_")) }
    }

    @Test func theBodyIsComparedAsCanonicalJSONAndADifferentOneIs422() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let body = #"{"redirect_uris":["com.example.app:/cb"],"client_name":"Caf\u00e9","scope":"openid"}"#
            let sameMeaning =
                "{ \"scope\" : \"openid\",\n \"client_name\":\"Café\", \"redirect_uris\":[\"com.example.app:/cb\"]}"
            let first = try await client.send(.post, path, token: token, json: body, headers: Self.keyed("k-1"))
            #expect(first.status == .created)
            let reordered = try await client.send(
                .post, path, token: token, json: sameMeaning, headers: Self.keyed("k-1"))
            #expect(reordered.status == .created)
            #expect(reordered.json["client_id"] as? String == first.json["client_id"] as? String)
            let different = try await client.send(
                .post, path, token: token, json: #"{"redirect_uris":["com.example.app:/other"]}"#,
                headers: Self.keyed("k-1"))
            #expect(different.status == .unprocessableContent)
            #expect(different.errorCode == "invalid_request")
            // The quoted structured-field form names the same key.
            let quoted = try await client.send(.post, path, token: token, json: body, headers: Self.keyed("\"k-1\""))
            #expect(quoted.json["client_id"] as? String == first.json["client_id"] as? String)
        }
        #expect(try await Self.clients(of: h.user, h).all == 1)
    }

    @Test func keysBelongToTheirPrincipal() async throws {
        let h = try await GatewayHarness.make(
            policy: #"{"registration_mechanisms":["user_token","initial_access_token","open"]}"#)
        let other = try await h.addUser()
        let alice = try await h.dcrToken()
        let bob = try await h.dcrToken(sub: other.uuidString)
        let initialAccess = try await h.createInitialAccessToken(uses: 1)
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let a = try await client.send(.post, path, token: alice, json: Self.native, headers: Self.keyed("shared"))
            let b = try await client.send(.post, path, token: bob, json: Self.native, headers: Self.keyed("shared"))
            #expect(a.status == .created && b.status == .created)
            #expect(a.json["client_id"] as? String != b.json["client_id"] as? String)

            // A replay takes no second use of a one-use initial access token, and still answers.
            let iat1 = try await client.send(
                .post, path, token: initialAccess, json: Self.native, headers: Self.keyed("shared"))
            let iat2 = try await client.send(
                .post, path, token: initialAccess, json: Self.native, headers: Self.keyed("shared"))
            #expect(iat1.status == .created && iat2.status == .created)
            #expect(iat1.json["client_id"] as? String == iat2.json["client_id"] as? String)
            #expect(iat1.json["client_id"] as? String != a.json["client_id"] as? String)
            let anotherKey = try await client.send(
                .post, path, token: initialAccess, json: Self.native, headers: Self.keyed("other"))
            #expect(anotherKey.status == .unauthorized)

            let open1 = try await client.send(.post, path, json: Self.native, headers: Self.keyed("shared"))
            let open2 = try await client.send(.post, path, json: Self.native, headers: Self.keyed("shared"))
            #expect(open1.status == .created && open2.status == .created)
            #expect(open1.json["client_id"] as? String == open2.json["client_id"] as? String)
            #expect(open1.json["client_id"] as? String != iat1.json["client_id"] as? String)
        }
    }

    @Test func malformedKeysAreRefused() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            for key in ["", "\"\"", String(repeating: "k", count: 256), "\"open", "\"a\\\"b\"", "kéy"] {
                let response = try await client.send(
                    .post, path, token: token, json: Self.native, headers: Self.keyed(key))
                #expect(response.status == .badRequest, "key \(key.prefix(20))")
                #expect(response.errorCode == "invalid_request")
            }
            var twice: HTTPFields = [:]
            twice.append(HTTPField(name: IdempotencyKey.header, value: "a"))
            twice.append(HTTPField(name: IdempotencyKey.header, value: "b"))
            let response = try await client.send(.post, path, token: token, json: Self.native, headers: twice)
            #expect(response.status == .badRequest)
            #expect(String(repeating: "k", count: 255).utf8.count == IdempotencyKey.maximumLength)
        }
        #expect(try await Self.clients(of: h.user, h).all == 0)
    }

    /// The stored row of a key, as the gateway would write it for `body` (compact JSON in canonical order).
    static func insertKey(
        _ h: GatewayHarness, key: String, body: String, state: String, updatedAgo: TimeInterval,
        expiresIn: TimeInterval, clientID: String? = nil
    ) async throws {
        let canonical = String(
            decoding: CanonicalJSON.encode(try StrictJSONParser.parse(Array(body.utf8))), as: UTF8.self)
        let now = Date()
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO registration_idempotency_keys
                           (tenant_id, principal, key_hash, request_hash, state, client_id, created_at, updated_at,
                            expires_at)
                    VALUES (\(h.tenant), \("user:\(h.user.uuidString.lowercased())"), \(GatewayHarness.hasher.hash(key)),
                            \(GatewayHarness.hasher.hash(canonical)), \(state), \(clientID),
                            \(now.addingTimeInterval(-updatedAgo)), \(now.addingTimeInterval(-updatedAgo)),
                            \(now.addingTimeInterval(expiresIn)))
                    """, logger: database.logger)
            }
        }
    }

    @Test func aKeyInFlightIs409UntilItsRequestIsPresumedDead() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        // Last updated "in an hour": however slow the machine, the request below finds it fresh, never abandoned.
        try await Self.insertKey(
            h, key: "busy", body: Self.native, state: "in_flight", updatedAgo: -3600, expiresIn: 7200)
        try await Self.insertKey(
            h, key: "dead", body: Self.native, state: "in_flight", updatedAgo: 120, expiresIn: 3600)
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let busy = try await client.send(.post, path, token: token, json: Self.native, headers: Self.keyed("busy"))
            #expect(busy.status == .conflict)
            #expect(busy.errorCode == "invalid_request")
            #expect(busy.headers[.retryAfter] != nil)
            // A different body is still a misuse of the key, in flight or not.
            let other = try await client.send(
                .post, path, token: token, json: #"{"redirect_uris":["com.example.app:/x"]}"#,
                headers: Self.keyed("busy"))
            #expect(other.status == .unprocessableContent)
            let dead = try await client.send(.post, path, token: token, json: Self.native, headers: Self.keyed("dead"))
            #expect(dead.status == .created)
        }
        #expect(try await Self.clients(of: h.user, h).all == 1)
    }

    @Test func aFailedRegistrationGivesItsKeyBack() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let bad = #"{"redirect_uris":["http://localhost/cb"]}"#
            let first = try await client.send(.post, path, token: token, json: bad, headers: Self.keyed("retry-me"))
            #expect(first.status == .badRequest)
            let again = try await client.send(.post, path, token: token, json: bad, headers: Self.keyed("retry-me"))
            #expect(again.status == .badRequest, "the key stayed in flight after a refused registration")
        }
    }

    @Test func anExpiredKeyNoLongerAnswers() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let first = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token, json: Self.native, headers: Self.keyed("old"))
            let oldClient = try #require(first.json["client_id"] as? String)
            try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        "UPDATE registration_idempotency_keys SET expires_at = now() - interval '1 second'",
                        logger: database.logger)
                }
            }
            let again = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token, json: Self.native, headers: Self.keyed("old"))
            #expect(again.status == .created)
            #expect(again.json["client_id"] as? String != oldClient)
        }
    }

    @Test func aKeyWhoseClientIsNoLongerActiveIs409() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let first = try await client.send(.post, path, token: token, json: Self.native, headers: Self.keyed("gone"))
            let clientID = try #require(first.json["client_id"] as? String)
            try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        "UPDATE clients SET status = 'revoked' WHERE client_id = \(clientID)", logger: database.logger)
                }
            }
            let retry = try await client.send(.post, path, token: token, json: Self.native, headers: Self.keyed("gone"))
            #expect(retry.status == .conflict)
            #expect(retry.json["error"] as? String == "invalid_request")
            #expect(retry.json["client_id"] == nil, "a revoked client must not be handed out again")
            let clients = try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    var count = 0
                    for try await n in try await connection.query(
                        "SELECT count(*)::int FROM clients WHERE client_kind = 'dynamic'", logger: database.logger
                    ).decode(Int.self) { count = n }
                    return count
                }
            }
            #expect(clients == 1, "the retry registered a second client")
        }
    }

    @Test func twentyParallelRetriesOverHTTPMakeOneClient() async throws {
        let h = try await GatewayHarness.make(
            policy: #"{"rate_limits":{"registration":{"per_source_per_minute":100}}}"#)
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp(live: true) { client in
            let port = try #require(client.port)
            // Separate connections, so the retries really overlap in the gateway; each closes after its answer,
            // so no idle keep-alive connection outlives the test.
            let body = Self.confidential
            let send: @Sendable () async throws -> (Int, String?) = {
                let connection = try await RawClient.connect(port: port)
                defer { connection.close() }
                let sent = await connection.send(
                    "POST /t/\(h.tenant)/register HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                        + "Authorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
                        + "Idempotency-Key: parallel-\(h.tenant)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                #expect(sent)
                let answered = await connection.waitFor(.seconds(60)) { $0.isClosed }
                #expect(answered, "no complete answer within 60 s: \(connection.received.prefix(300))")
                let text = connection.received
                let payload = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
                return (connection.status ?? 0, TestJSON.object(Array(payload.utf8))["client_id"] as? String)
            }
            let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for _ in 0..<20 { group.addTask { try await send() } }
                return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.0 == 201 || $0.0 == 409 }, "\(answers.map(\.0))")
            #expect(answers.contains { $0.0 == 201 })
            #expect(Set(answers.compactMap(\.1)).count == 1)
            // Once the first request is done, a retry gets the client.
            let late = try await send()
            #expect(late.0 == 201)
            #expect(Set(answers.compactMap(\.1)) == [late.1])
        }
        #expect(try await Self.clients(of: h.user, h).all == 1)
        #expect(try await h.outboxPayloads(.clientRegistered).count == 1)
    }
}
