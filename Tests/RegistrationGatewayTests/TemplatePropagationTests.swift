import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import PostgresNIO
import Testing

@testable import RegistrationGateway

// Serialized: every test runs a gateway app with its own connection pools, and the test cluster is shared.
@Suite(.serialized) struct TemplatePropagationTests {
    static let template =
        #"{"metadata":{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","client_name":"Mobile","scope":"openid"},"overridable_fields":["client_name","redirect_uris"]}"#

    func adminToken(_ h: GatewayHarness) async throws -> String {
        try await h.dcrToken(sub: "admin-client", scope: "admin", audience: "https://admin.latchkey.test")
    }

    /// Registers an instance of `softwareID`; returns (client_id, registration_access_token).
    static func instance(
        _ client: any TestClientProtocol, _ h: GatewayHarness, token: String, softwareID: String, extra: String = ""
    ) async throws -> (String, String) {
        let response = try await client.send(
            .post, "/t/\(h.tenant)/register", token: token, json: #"{"software_id":"\#(softwareID)"\#(extra)}"#)
        #expect(response.status == .created, "\(String(buffer: response.body))")
        return (
            try #require(response.json["client_id"] as? String),
            try #require(response.json["registration_access_token"] as? String)
        )
    }

    static func templateVersions(_ h: GatewayHarness) async throws -> [String: Int] {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    "SELECT client_id, template_version FROM clients WHERE template_version IS NOT NULL",
                    logger: database.logger)
                var versions: [String: Int] = [:]
                for try await (id, version) in rows.decode((String, Int).self) { versions[id] = version }
                return versions
            }
        }
    }

    @Test func aTemplateUpdateReachesEveryActiveInstanceKeepingItsOverrides() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let iat = try await h.createInitialAccessToken(uses: 10)
        let path = "/admin/tenants/\(h.tenant)/templates"
        try await GatewayHarness.withApp { client in
            let created = try await client.send(.put, "\(path)/mobile", token: admin, json: Self.template)
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let (named, namedRAT) = try await Self.instance(
                client, h, token: iat, softwareID: "mobile", extra: #","client_name":"Alice's phone""#)
            let (plain, plainRAT) = try await Self.instance(client, h, token: iat, softwareID: "mobile")
            let (gone, _) = try await Self.instance(client, h, token: iat, softwareID: "mobile")
            let revoked = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/\(gone)/revoke", token: admin, json: #"{"reason":"lost"}"#)
            #expect(revoked.status == .ok)

            let updated = try await client.send(
                .put, "\(path)/mobile", token: admin,
                json:
                    #"{"metadata":{"redirect_uris":["com.example.app:/v2"],"token_endpoint_auth_method":"none","client_name":"Mobile v2","scope":"openid profile"},"overridable_fields":["client_name","redirect_uris"]}"#
            )
            #expect(updated.status == .ok, "\(String(buffer: updated.body))")
            #expect(updated.json["version"] as? Int == 2)
            #expect(updated.json["instances_updated"] as? Int == 2)

            // RFC 7592 GET shows the effective metadata: the template's new values, the instance's own name.
            let namedRead = try await client.send(.get, "/t/\(h.tenant)/register/\(named)", token: namedRAT)
            #expect(namedRead.json["client_name"] as? String == "Alice's phone")
            #expect(namedRead.json["redirect_uris"] as? [String] == ["com.example.app:/v2"])
            #expect(namedRead.json["scope"] as? String == "openid profile")
            let plainRead = try await client.send(.get, "/t/\(h.tenant)/register/\(plain)", token: plainRAT)
            #expect(plainRead.json["client_name"] as? String == "Mobile v2")
            #expect(plainRead.json["software_id"] as? String == "mobile")

            // Overridability withdrawn: the instance's own name gives way to the template's. The other
            // instance's metadata does not change, so it gets no event.
            let narrowed = try await client.send(
                .put, "\(path)/mobile", token: admin,
                json:
                    #"{"metadata":{"redirect_uris":["com.example.app:/v2"],"token_endpoint_auth_method":"none","client_name":"Mobile v2","scope":"openid profile"},"overridable_fields":["redirect_uris"]}"#
            )
            #expect(narrowed.json["instances_updated"] as? Int == 1)
            let renamed = try await client.send(.get, "/t/\(h.tenant)/register/\(named)", token: namedRAT)
            #expect(renamed.json["client_name"] as? String == "Mobile v2")
            // An instance may no longer send the withdrawn member.
            let refused = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: #"{"software_id":"mobile","client_name":"Mine"}"#)
            #expect(refused.errorCode == "invalid_client_metadata")
            #expect(try await Self.templateVersions(h) == [named: 3, plain: 3, gone: 1])
        }
        let events = try await h.outboxPayloads(.clientUpdated)
        #expect(events.count == 3)
        let validator = try EventSchemaValidator()
        var byVersion: [Int: [String]] = [:]
        for payload in events {
            #expect(!payload.contains(iat) && !payload.contains(admin))
            #expect(
                validator.firstError(
                    in: try LatchkeyJSON.decode(JSONValue.self, from: Data(payload.utf8)), as: .clientUpdated) == nil)
            let event = try CloudEvent<ClientUpdated>.decode(from: Data(payload.utf8))
            #expect(event.data.templateID == "mobile")
            #expect(event.data.actor == .admin("admin-client"))
            byVersion[event.data.templateVersion ?? 0, default: []].append(event.data.clientID)
            if event.data.templateVersion == 2 {
                #expect(Set(["redirect_uris", "scope"]).isSubset(of: Set(event.data.changedFields)))
            } else {
                #expect(event.data.changedFields == ["client_name"])
            }
        }
        #expect(Set(byVersion[2] ?? []).count == 2)
        #expect(byVersion[3]?.count == 1)
    }

    @Test func anUpdateThatWouldBreakAnInstanceIsRefusedAsAWhole() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let iat = try await h.createInitialAccessToken(uses: 10)
        let path = "/admin/tenants/\(h.tenant)/templates/strict"
        try await GatewayHarness.withApp { client in
            #expect(try await client.send(.put, path, token: admin, json: Self.template).status == .ok)
            let (own, ownRAT) = try await Self.instance(
                client, h, token: iat, softwareID: "strict", extra: #","redirect_uris":["com.example.own:/cb"]"#)
            _ = try await Self.instance(client, h, token: iat, softwareID: "strict")
            // As a web template, the instance's own private-use redirect URI would be invalid.
            let web = try await client.send(
                .put, path, token: admin,
                json:
                    #"{"metadata":{"redirect_uris":["https://app.example.com/cb"],"application_type":"web","token_endpoint_auth_method":"none","client_name":"Web"},"overridable_fields":["client_name","redirect_uris"]}"#
            )
            #expect(web.status == .badRequest)
            #expect(web.errorCode == "invalid_client_metadata")
            #expect((web.json["error_description"] as? String)?.contains(own) == true)
            // A public template cannot turn its instances into secret-holding clients (they have no secret).
            let secret = try await client.send(
                .put, path, token: admin,
                json:
                    #"{"metadata":{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"client_secret_basic"},"overridable_fields":["client_name","redirect_uris"]}"#
            )
            #expect(secret.errorCode == "invalid_client_metadata")

            let templates = try await client.send(.get, "/admin/tenants/\(h.tenant)/templates", token: admin)
            let stored = try #require((templates.json["templates"] as? [[String: Any]])?.first)
            #expect(stored["version"] as? Int == 1)
            let read = try await client.send(.get, "/t/\(h.tenant)/register/\(own)", token: ownRAT)
            #expect(read.json["application_type"] as? String == "native")
            #expect(read.json["redirect_uris"] as? [String] == ["com.example.own:/cb"])
        }
        #expect(try await h.outboxPayloads(.clientUpdated).isEmpty)
    }

    @Test func propagationWalksMoreInstancesThanOneBatch() async throws {
        let h = try await GatewayHarness.make(policy: #"{"registration_mechanisms":["initial_access_token"]}"#)
        let admin = try await adminToken(h)
        let count = TemplatePropagation.batchSize + 7
        try await GatewayHarness.withApp { client in
            let created = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/templates/bulk", token: admin, json: Self.template)
            #expect(created.status == .ok)
        }
        // Instances inserted directly: registering hundreds through HTTP would only slow the test down.
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection -> Void in
                try await connection.query(
                    """
                    INSERT INTO clients (tenant_id, client_id, client_type, application_type, software_id, registration_mechanism,
                                         metadata, template_overrides, template_version)
                    SELECT \(h.tenant), 'bulk-' || lpad(n::text, 4, '0'), 'public', 'native', 'bulk', 'initial_access_token',
                           t.metadata, '{}'::jsonb, 1
                    FROM generate_series(1, \(count)) AS n, client_templates t
                    WHERE t.tenant_id = \(h.tenant) AND t.software_id = 'bulk'
                    """, logger: database.logger)
            }
        }
        try await GatewayHarness.withApp { client in
            let updated = try await client.send(
                .put, "/admin/tenants/\(h.tenant)/templates/bulk", token: admin,
                json:
                    #"{"metadata":{"redirect_uris":["com.example.app:/bulk"],"token_endpoint_auth_method":"none","client_name":"Bulk"},"overridable_fields":[]}"#
            )
            #expect(updated.status == .ok, "\(String(buffer: updated.body))")
            #expect(updated.json["instances_updated"] as? Int == count)
        }
        let versions = try await Self.templateVersions(h)
        #expect(versions.count == count && versions.values.allSatisfy { $0 == 2 })
        let events = try await h.outboxPayloads(.clientUpdated)
        #expect(events.count == count)
        #expect(
            Set(try events.map { try CloudEvent<ClientUpdated>.decode(from: Data($0.utf8)).data.clientID }).count
                == count)
    }

    @Test func theTokenServiceHonoursTheNewScopeAndRedirectURIsAtOnce() async throws {
        let h = try await GatewayHarness.make(
            policy: #"{"allowed_grant_types":["authorization_code","refresh_token","client_credentials"]}"#)
        let admin = try await adminToken(h)
        let iat = try await h.createInitialAccessToken(uses: 1)
        let path = "/admin/tenants/\(h.tenant)/templates/service"
        let tokenService = try ServiceProcess(
            "token-service",
            environment: [
                "DATABASE_URL": try TestEnvironment.appDatabase().url,
                "DATABASE_SYSTEM_URL": try TestEnvironment.systemDatabase().url,
                "KAFKA_BROKERS": GatewayHarness.sharedCluster.bootstrapServers, "LOG_LEVEL": "warning",
                "TOKEN_SERVICE_PUBLIC_URL": GatewayHarness.tokenServiceURL,
                "REGISTRATION_GATEWAY_PUBLIC_URL": GatewayHarness.publicURL,
                "KEY_ENCRYPTION_KEY": TestEnvironment.keyEncryptionKey, "SECRET_HASH_KEY": GatewayHarness.secretHashKey,
                "DPOP_NONCE_SECRET": KeyMaterial.generateConfigurationValue(),
            ])
        defer { Task { [tokenService] in _ = await tokenService.stop() } }
        #expect(
            await tokenService.waitUntilHealthy(timeout: .seconds(60)), "\(tokenService.capturedOutput().suffix(2_000))"
        )
        let base = "http://127.0.0.1:\(tokenService.port)/t/\(h.tenant)"
        try await GatewayHarness.withApp { client in
            #expect(
                try await client.send(
                    .put, path, token: admin,
                    json: Self.serviceTemplate(redirect: "https://app.example.com/cb", scope: "openid")
                ).status == .ok)
            let registered = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: #"{"software_id":"service"}"#)
            #expect(registered.status == .created, "\(String(buffer: registered.body))")
            let clientID = try #require(registered.json["client_id"] as? String)
            let secret = try #require(registered.json["client_secret"] as? String)

            #expect(try await Self.clientCredentials(base, clientID, secret, scope: "profile") == 400)
            #expect(try await Self.authorize(base, clientID, redirect: "https://app.example.com/v2") == 400)
            let updated = try await client.send(
                .put, path, token: admin,
                json: Self.serviceTemplate(redirect: "https://app.example.com/v2", scope: "openid profile"))
            #expect(updated.json["instances_updated"] as? Int == 1)
            #expect(try await Self.clientCredentials(base, clientID, secret, scope: "profile") == 200)
            #expect(try await Self.authorize(base, clientID, redirect: "https://app.example.com/v2") == 200)
            #expect(try await Self.authorize(base, clientID, redirect: "https://app.example.com/cb") == 400)
        }
        _ = await tokenService.stop()
    }

    /// A confidential web template that may use the code flow and client credentials.
    static func serviceTemplate(redirect: String, scope: String) -> String {
        #"{"metadata":{"redirect_uris":["\#(redirect)"],"application_type":"web","grant_types":["authorization_code","client_credentials"],"response_types":["code"],"token_endpoint_auth_method":"client_secret_basic","scope":"\#(scope)"},"overridable_fields":["client_name"]}"#
    }

    /// Status of a `client_credentials` token request.
    static func clientCredentials(_ base: String, _ clientID: String, _ secret: String, scope: String) async throws
        -> UInt
    {
        var request = HTTPClientRequest(url: "\(base)/token")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(
            name: "Authorization", value: "Basic " + Data("\(clientID):\(secret)".utf8).base64EncodedString())
        request.body = .bytes(ByteBuffer(string: "grant_type=client_credentials&scope=\(scope)"))
        return try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status.code
    }

    /// Status of an authorization request (200: sign-in page; 400: error page, no redirect).
    static func authorize(_ base: String, _ clientID: String, redirect: String) async throws -> UInt {
        let challenge = PKCE.s256Challenge(for: String(repeating: "v", count: 43))
        let query = [
            ("client_id", clientID), ("redirect_uri", redirect), ("response_type", "code"), ("scope", "openid"),
            ("code_challenge", challenge), ("code_challenge_method", "S256"), ("state", "s"),
        ]
        .map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(
            separator: "&")
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "\(base)/authorize?\(query)"), timeout: .seconds(10))
        return response.status.code
    }
}
