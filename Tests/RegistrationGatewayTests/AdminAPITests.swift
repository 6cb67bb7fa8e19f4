import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct AdminAPITests {
    static let native =
        #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","client_name":"Phone"}"#

    func adminToken(_ h: GatewayHarness, scope: String = "admin") async throws -> String {
        try await h.dcrToken(sub: "admin-client", scope: scope, audience: "https://admin.latchkey.test")
    }

    @Test func revokingAnInstanceKillsItsCredentialsAndRecordsActorAndReason() async throws {
        let h = try await GatewayHarness.make()
        let dcr = try await h.dcrToken()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let registered = try await client.send(.post, "/t/\(h.tenant)/register", token: dcr, json: Self.native)
            #expect(registered.status == .created)
            let clientID = try #require(registered.json["client_id"] as? String)
            let rat = try #require(registered.json["registration_access_token"] as? String)

            let listed = try await client.send(
                .get, "/admin/tenants/\(h.tenant)/clients?user=\(h.user.uuidString)", token: admin)
            #expect(listed.status == .ok)
            let clients = try #require(listed.json["clients"] as? [[String: Any]])
            #expect(clients.map { $0["client_id"] as? String } == [clientID])

            let revoked = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/\(clientID)/revoke", token: admin,
                json: #"{"reason":"device stolen"}"#)
            #expect(revoked.status == .ok, "\(String(buffer: revoked.body))")
            #expect(revoked.json["status"] as? String == "revoked")
            // RFC 7592 read with the old registration access token fails at once.
            #expect(
                try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: rat).status == .unauthorized)
            let again = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/\(clientID)/revoke", token: admin,
                json: #"{"reason":"again"}"#)
            #expect(again.status == .conflict)
            let read = try await client.send(.get, "/admin/tenants/\(h.tenant)/clients/\(clientID)", token: admin)
            #expect(read.json["status"] as? String == "revoked")
        }
        let events = try await h.outboxPayloads(.clientRevoked)
        let event = try #require(
            events.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        let data = try #require(event["data"] as? [String: Any])
        #expect(data["reason"] as? String == "admin")
        #expect(data["reason_detail"] as? String == "device stolen")
        #expect((data["actor"] as? [String: String]) == ["type": "admin", "id": "admin-client"])
        // No token on record: one being signed right now lives the policy's 600 s, plus the issuance slack.
        let revoked = try CloudEvent<ClientRevoked>.decode(from: Data(try #require(events.last).utf8)).data
        let expiry = try #require(
            revoked.accessTokensExpireAt, "ClientRevoked does not say when the client's tokens expire")
        #expect(abs(expiry.timeIntervalSince(revoked.revokedAt) - 660) < 1, "\(revoked.revokedAt) → \(expiry)")
    }

    @Test func tokensWithoutTheAdminScopeOrFromAnotherTenantAreRefused() async throws {
        let h = try await GatewayHarness.make()
        let other = try await GatewayHarness.make()
        let dcrOnly = try await adminToken(h, scope: "dcr")
        let foreign = try await adminToken(other)
        try await GatewayHarness.withApp { client in
            let anonymous = try await client.send(.get, "/admin/tenants/\(h.tenant)")
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            #expect(try await client.send(.get, "/admin/tenants/\(h.tenant)", token: dcrOnly).status == .forbidden)
            #expect(try await client.send(.get, "/admin/tenants/\(h.tenant)", token: foreign).status == .unauthorized)
            #expect(
                try await client.send(.get, "/admin/tenants/\(h.tenant)", token: "not-a-token").status == .unauthorized)
            // The bootstrap key cannot be used for anything but bootstrapping.
            #expect(
                try await client.send(.get, "/admin/tenants/\(h.tenant)", token: GatewayHarness.bootstrapKey).status
                    == .unauthorized)
            // Tenants exist in the shared test database, so the bootstrap key cannot create another.
            let create = try await client.send(
                .post, "/admin/tenants", token: GatewayHarness.bootstrapKey,
                json: #"{"tenant_id":"\#(TestEnvironment.uniqueTenant("bs"))"}"#)
            #expect(create.status == .forbidden)
        }
    }

    @Test func platformAdminsListTenantsAndANewTenantIsKnownAtOnce() async throws {
        let h = try await GatewayHarness.make()
        let other = try await GatewayHarness.make()
        let platform = try await adminToken(h)
        let foreign = try await adminToken(other)
        let fresh = TestEnvironment.uniqueTenant("new")
        try await GatewayHarness.withApp(platformTenant: h.tenant) { client in
            let listed = try await client.send(.get, "/admin/tenants", token: platform)
            #expect(listed.status == .ok)
            let ids = (listed.json["tenants"] as? [[String: Any]] ?? []).compactMap { $0["tenant_id"] as? String }
            #expect(ids.contains(h.tenant) && ids.contains(other.tenant) && ids == ids.sorted())
            #expect(try await client.send(.get, "/admin/tenants").status == .unauthorized)
            #expect(try await client.send(.get, "/admin/tenants", token: foreign).status == .unauthorized)

            // Looked up while unknown, then created: the new tenant is administered at once.
            #expect(try await client.send(.get, "/admin/tenants/\(fresh)", token: platform).status == .notFound)
            let created = try await client.send(
                .post, "/admin/tenants", token: platform, json: #"{"tenant_id":"\#(fresh)"}"#)
            #expect(created.status == .created)
            #expect(try await client.send(.get, "/admin/tenants/\(fresh)", token: platform).status == .ok)
            #expect(try await client.send(.get, "/admin/tenants/\(fresh)/templates", token: platform).status == .ok)
        }
        // Without a platform tenant nobody may list them.
        try await GatewayHarness.withApp { client in
            let listed = try await client.send(.get, "/admin/tenants", token: platform)
            #expect(listed.status == .notFound)
        }
    }

    @Test func policyTemplatesAndInitialAccessTokens() async throws {
        let h = try await GatewayHarness.make(
            policy: #"{"registration_mechanisms":["user_token","initial_access_token"]}"#)
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let bad = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/policy", token: admin, json: #"{"max_clients_per_usr":3}"#)
            #expect(bad.status == .badRequest)
            #expect(bad.errorCode == "invalid_request")
            let good = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/policy", token: admin,
                json: #"{"registration_mechanisms":["user_token","initial_access_token"],"max_clients_per_user":3}"#)
            #expect(good.status == .ok, "\(String(buffer: good.body))")
            #expect(good.json["policy_version"] as? Int == 2)
            let tenant = try await client.send(.get, "/admin/tenants/\(h.tenant)", token: admin)
            #expect((tenant.json["policy"] as? [String: Any])?["max_clients_per_user"] as? Int == 3)

            let template = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/templates", token: admin,
                json:
                    #"{"software_id":"mobile-app","metadata":{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","client_name":"Mobile"},"overridable_fields":["client_name"]}"#
            )
            #expect(template.status == .created, "\(String(buffer: template.body))")
            let templates = try await client.send(.get, "/admin/tenants/\(h.tenant)/templates", token: admin)
            #expect((templates.json["templates"] as? [[String: Any]])?.first?["software_id"] as? String == "mobile-app")
            let unknownField = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/templates/mobile-app", token: admin,
                json: #"{"metadata":{"redirect_uris":["com.example.app:/cb"]},"overridable_fields":["client_secret"]}"#)
            #expect(unknownField.status == .badRequest)

            let minted = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/initial-access-tokens", token: admin,
                json: #"{"uses":1,"expires_in":600}"#)
            #expect(minted.status == .created)
            let iat = try #require(minted.json["initial_access_token"] as? String)
            let viaTemplate = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat,
                json: #"{"software_id":"mobile-app","client_name":"Bob's phone"}"#)
            #expect(viaTemplate.status == .created, "\(String(buffer: viaTemplate.body))")
            #expect(viaTemplate.json["client_name"] as? String == "Bob's phone")
            // One use only.
            #expect(
                try await client.send(.post, "/t/\(h.tenant)/register", token: iat, json: Self.native).status
                    == .unauthorized)
        }
    }

    @Test func usersCreatedByAnAdminAreHashedAndAnnounced() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let body = #"{"username":"demo-user","email":"demo@example.com","password":"a long demo passphrase"}"#
            let created = try await client.send(.post, "/admin/tenants/\(h.tenant)/users", token: admin, json: body)
            #expect(created.status == .created, "\(String(buffer: created.body))")
            #expect(
                try await client.send(.post, "/admin/tenants/\(h.tenant)/users", token: admin, json: body).status
                    == .conflict)
            let weak = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/users", token: admin, json: #"{"username":"bob","password":"short"}"#
            )
            #expect(weak.status == .badRequest)
        }
        let stored = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection -> String? in
                let rows = try await connection.query(
                    "SELECT password_hash FROM users WHERE tenant_id = \(h.tenant) AND username = 'demo-user'",
                    logger: database.logger)
                for try await hash in rows.decode(String?.self) { return hash }
                return nil
            }
        }
        #expect(stored?.hasPrefix("scrypt$") == true)
        let events = try await h.outboxPayloads(.userRegistered)
        #expect(events.count == 1 && events[0].contains(#""method":"admin""#) && !events[0].contains("passphrase"))
    }

    @Test func staticClientsMayCarryReservedScopes() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let created = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients", token: admin,
                json:
                    #"{"client_name":"Mobile DCR client","redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","scope":"openid dcr"}"#
            )
            #expect(created.status == .created, "\(String(buffer: created.body))")
            #expect(created.json["scope"] as? String == "openid dcr")
            #expect(created.json["client_secret"] == nil)
            let confidential = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients", token: admin,
                json:
                    #"{"client_name":"Ops","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"admin"}"#
            )
            #expect(confidential.status == .created, "\(String(buffer: confidential.body))")
            #expect((confidential.json["client_secret"] as? String)?.hasPrefix("lk_cs_") == true)
        }
        let kinds = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection -> [String] in
                let rows = try await connection.query(
                    "SELECT client_kind || '/' || registration_mechanism FROM clients WHERE tenant_id = \(h.tenant)",
                    logger: database.logger)
                var kinds: [String] = []
                for try await kind in rows.decode(String.self) { kinds.append(kind) }
                return kinds
            }
        }
        #expect(kinds == ["static/admin", "static/admin"])
    }

    @Test(arguments: [
        ("", "application/json"), ("{", "application/json"), ("[]", "application/json"),
        (#"{"reason":"x"}"#, "text/plain"),
        (#"{"reason":"\#(String(repeating: "x", count: 600))"}"#, "application/json"),
        (#"{"reason":"a\u0000b"}"#, "application/json"),
    ])
    func malformedBodiesAreClearErrors(body: String, contentType: String) async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let response = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/no-such-client/revoke", token: admin, json: body,
                contentType: contentType)
            #expect([400, 404, 415].contains(response.status.code), "\(body): \(response.status)")
            #expect(response.errorCode != nil)
        }
    }

    /// PostgreSQL cannot store U+0000 in jsonb or text: a template carrying it (in a name, in a `jwks` member
    /// name, or in an ignored field) is a 400, never a 500 (found by schemathesis).
    @Test(arguments: [
        #"{"metadata":{"redirect_uris":["com.example.app:/cb"],"client_name":"a\u0000b"}}"#,
        #"{"metadata":{"redirect_uris":["com.example.app:/cb"],"jwks":{"keys":[],"\u0000":{}}}}"#,
        #"{"metadata":{"redirect_uris":["com.example.app:/cb"]},"true":{"":["\u0000"]}}"#,
        #"{"metadata":{"redirect_uris":["com.example.app:/cb"]},"overridable_fields":["client_name\u0000"]}"#,
    ])
    func templatesWithNULAreRefused(body: String) async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            for method in [HTTPRequest.Method.put, .post] {
                let uri = "/admin/tenants/\(h.tenant)/templates" + (method == .put ? "/nul-app" : "")
                let response = try await client.send(method, uri, token: admin, json: body)
                #expect(response.status == .badRequest, "\(method) \(body): \(String(buffer: response.body))")
                #expect(response.errorCode == "invalid_request")
            }
            // An escaped backslash before "u0000" is ordinary text and is stored.
            let literal = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/templates/nul-app", token: admin,
                json: #"{"metadata":{"redirect_uris":["com.example.app:/cb"],"client_name":"a\\u0000b"}}"#)
            #expect(literal.status == .ok, "\(String(buffer: literal.body))")
            #expect((literal.json["metadata"] as? [String: Any])?["client_name"] as? String == #"a\u0000b"#)
        }
    }

    @Test func oversizedBodiesAreRefused() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let huge = #"{"reason":""# + String(repeating: "x", count: 200_000) + #""}"#
            let response = try await client.send(.put, "/admin/tenants/\(h.tenant)/policy", token: admin, json: huge)
            #expect(response.status == .contentTooLarge)
        }
    }
}

/// The bootstrap key in an empty database: first tenant, then that tenant's first client, and nothing more.
@Suite struct AdminBootstrapTests {
    /// A gateway on an empty, migrated scratch database: nothing bootstrapped yet.
    static func withEmptyPlatform(
        _ setup: TestingSetup, _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let settings = try await TestServiceSettings.make(
                .registrationGateway, kafkaBrokers: GatewayHarness.sharedCluster.bootstrapServers,
                database: scratch.database)
            let app = try buildApplication(
                settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
            try await app.journaledTest(setup, body)
        }
    }

    @Test func bootstrapCreatesTheFirstTenantAndItsFirstClientOnly() async throws {
        let key = GatewayHarness.bootstrapKey
        try await Self.withEmptyPlatform(.router) { client in
            do {
                #expect(
                    try await client.send(
                        .post, "/admin/tenants", token: "wrong-key-\(key)", json: #"{"tenant_id":"acme"}"#
                    ).status
                        == .unauthorized)
                let created = try await client.send(
                    .post, "/admin/tenants", token: key, json: #"{"tenant_id":"acme","display_name":"Acme"}"#)
                #expect(created.status == .created, "\(String(buffer: created.body))")
                #expect(
                    try await client.send(.post, "/admin/tenants", token: key, json: #"{"tenant_id":"second"}"#).status
                        == .forbidden)
                #expect(
                    try await client.send(.post, "/admin/tenants", token: key, json: #"{"tenant_id":"Bad Slug"}"#)
                        .status == .badRequest)
                let admin =
                    #"{"client_name":"Admin","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"admin"}"#
                let first = try await client.send(.post, "/admin/tenants/acme/clients", token: key, json: admin)
                #expect(first.status == .created, "\(String(buffer: first.body))")
                #expect(first.json["client_secret"] is String)
                #expect(
                    try await client.send(.post, "/admin/tenants/acme/clients", token: key, json: admin).status
                        == .forbidden)
            }
        }
    }

    /// Bootstrap requests racing each other create one tenant: the check and the insert run under one
    /// advisory lock.
    @Test func concurrentBootstrapRequestsCreateOneTenant() async throws {
        let key = GatewayHarness.bootstrapKey
        try await Self.withEmptyPlatform(.live) { client in
            do {
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            try await client.send(
                                .post, "/admin/tenants", token: key, json: #"{"tenant_id":"race-\#(index)"}"#
                            ).status
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.filter { $0 == .created }.count == 1, "\(statuses)")
                #expect(statuses.filter { $0 == .forbidden }.count == 7, "\(statuses)")
            }
        }
    }
}
