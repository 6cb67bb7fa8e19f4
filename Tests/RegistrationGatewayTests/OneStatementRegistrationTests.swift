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

/// The common registration is one statement: counters, token use, client and event commit together, and a
/// refusal commits only the counters.
@Suite struct OneStatementRegistrationTests {
    static let policy = #"{"registration_mechanisms":["initial_access_token"]}"#

    /// A tenant registering with initial access tokens, on a freshly migrated scratch database, so
    /// `pg_stat_statements` holds only this test's statements there.
    struct ScratchTenant: Sendable {
        let tenant: String
        /// An initial access token with 20 uses.
        let token: String
        /// The role the gateway's statements run as, and the scratch database.
        let appRole: String
        let database: String

        func calls(of fragment: String) async throws -> Int64 {
            try await TestDatabase.calls(of: fragment, by: appRole, in: database)
        }
    }

    /// Runs `body` against a gateway on a scratch database with a ``ScratchTenant``.
    static func withScratchGateway(
        _ body: @escaping @Sendable (any TestClientProtocol, ScratchTenant) async throws -> Void
    ) async throws {
        try await TestDatabase.withScratchDatabase { owner in
            try await TestDatabase.migrate(owner)
            var appConfiguration = try TestEnvironment.appDatabase()
            appConfiguration.database = owner.database
            let tenant = TestEnvironment.uniqueTenant("os")
            let token = try await withPostgresClient(appConfiguration) { client in
                let database = Database(client: client, logger: TestEnvironment.logger)
                try await TestDatabase.createTenant(tenant, in: database, policy: Self.policy)
                return try await Self.createInitialAccessToken(uses: 20, tenant: tenant, in: database)
            }
            let settings = try await TestServiceSettings.make(
                .registrationGateway, kafkaBrokers: GatewayHarness.sharedCluster.bootstrapServers,
                database: owner.database)
            let app = try buildApplication(
                settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
            let scratch = ScratchTenant(
                tenant: tenant, token: token, appRole: appConfiguration.username, database: owner.database)
            try await app.journaledTest(.router) { client in try await body(client, scratch) }
        }
    }

    @Test func theRegistrationStatementDeclaresTheTypeOfEachParameter() {
        #expect(PreparedStatementShape.declaresEveryParameter(RegisterClientStatement.self))
    }

    @Test func aRegistrationIsOneStatement() async throws {
        try await Self.withScratchGateway { client, scratch in
            let path = "/t/\(scratch.tenant)/register"
            // The first request also looks the tenant up (then cached).
            #expect(
                try await client.send(.post, path, token: scratch.token, json: RegistrationEndpointTests.native)
                    .status == .created)
            let registrations = 5
            let before = try await scratch.calls(of: "")
            for _ in 0..<registrations {
                let response = try await client.send(
                    .post, path, token: scratch.token, json: RegistrationEndpointTests.native)
                #expect(response.status == .created)
            }
            let statements = try await scratch.calls(of: "") - before
            // One statement each.
            #expect(
                statements == Int64(registrations),
                "\(registrations) registrations ran \(statements) statements")
        }
    }

    /// Registrations that take the statement-by-statement path (here: with an `Idempotency-Key`) count their
    /// limits and claim their key in one statement each, a transaction of its own: the counters every
    /// registration of the tenant updates, and the key's row, are never locked across the round trips of a
    /// transaction, where one slow gateway would hold up every other registration.
    @Test func countsAndKeyClaimsAreOneStatementEach() async throws {
        try await Self.withScratchGateway { client, scratch in
            let requests = 4
            var clientIDs: Set<String> = []
            for _ in 0..<requests {
                let response = try await client.send(
                    .post, "/t/\(scratch.tenant)/register", token: scratch.token,
                    json: RegistrationEndpointTests.native, headers: [IdempotencyKey.header: "one-key"])
                #expect(response.status == .created)
                clientIDs.formUnion([response.json["client_id"] as? String].compactMap { $0 })
            }
            #expect(clientIDs.count == 1, "the retries got other clients: \(clientIDs)")
            let counts = try await scratch.calls(of: "count_registration_request(")
            let claims = try await scratch.calls(of: "claim_registration_idempotency_key(")
            let inlineCounts = try await scratch.calls(of: "INSERT INTO registration_rate_limits")
            let inlineClaims = try await scratch.calls(of: "INSERT INTO registration_idempotency_keys")
            #expect(counts == Int64(requests))
            #expect(claims == Int64(requests))
            #expect(inlineCounts == 0)
            #expect(inlineClaims == 0)
        }
    }

    @Test func aRateLimitedRegistrationWritesNothingButItsCount() async throws {
        let (h, responses) = try await RegistrationRateLimitTests.inOneWindow {
            let h = try await GatewayHarness.make(
                policy:
                    #"{"registration_mechanisms":["initial_access_token"],"rate_limits":{"registration":{"per_tenant_per_minute":100,"per_source_per_minute":2}}}"#
            )
            return (h, try await h.createInitialAccessToken(uses: 5))
        } _: { h, token in
            let responses = try await GatewayHarness.withAppResult { client in
                let path = "/t/\(h.tenant)/register"
                let unknown = try await client.send(
                    .post, path, token: SecretTokens.generate(prefix: "lk_iat_"), json: RegistrationEndpointTests.native
                )
                let created = try await client.send(.post, path, token: token, json: RegistrationEndpointTests.native)
                let refused = try await client.send(.post, path, token: token, json: RegistrationEndpointTests.native)
                return [unknown, created, refused]
            }
            return (h, responses)
        }
        // A refused token still counts against the source…
        #expect(responses[0].status == .unauthorized)
        #expect(responses[1].status == .created)
        // …so the third request of the window is over the limit of 2.
        #expect(responses[2].status == .tooManyRequests)
        #expect(responses[2].headers[.retryAfter].flatMap { Int($0) }.map { (1...60).contains($0) } == true)
        #expect(try await h.outboxPayloads(.clientRegistered).count == 1)
        let (clients, remaining) = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    """
                    SELECT (SELECT count(*) FROM clients)::int8, (SELECT sum(remaining_uses) FROM initial_access_tokens)::int8
                    """, logger: database.logger)
                for try await row in rows.decode((Int64, Int64).self) { return row }
                return (-1, -1)
            }
        }
        #expect(clients == 1)
        // Only the registration that went through used the token.
        #expect(remaining == 4)
    }

    @Test func aTemplateChangedAfterItWasCachedIsReadAgain() async throws {
        let h = try await GatewayHarness.make()
        try await h.createTemplate(
            "cached-app",
            metadata:
                #"{"redirect_uris":["com.example.cached:/cb"],"client_name":"Cached","grant_types":["authorization_code"]}"#,
            overridable: ["client_name"])
        let token = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let first = try await client.send(.post, path, token: token, json: #"{"software_id":"cached-app"}"#)
            #expect(first.status == .created)
            #expect(first.json["client_name"] as? String == "Cached")
            try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        """
                        UPDATE client_templates SET version = version + 1,
                            metadata = jsonb_set(metadata, '{client_name}', '"Renamed"')
                        WHERE tenant_id = \(h.tenant) AND software_id = 'cached-app'
                        """, logger: database.logger)
                }
            }
            let second = try await client.send(.post, path, token: token, json: #"{"software_id":"cached-app"}"#)
            #expect(second.status == .created)
            #expect(second.json["client_name"] as? String == "Renamed")
            // And the next one is validated against the version now cached.
            let third = try await client.send(.post, path, token: token, json: #"{"software_id":"cached-app"}"#)
            #expect(third.json["client_name"] as? String == "Renamed")
        }
        let versions = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    "SELECT template_version FROM clients ORDER BY created_at", logger: database.logger)
                var versions: [Int] = []
                for try await version in rows.decode(Int.self) { versions.append(version) }
                return versions
            }
        }
        #expect(versions == [1, 2, 2])
    }

    private static func createInitialAccessToken(uses: Int, tenant: String, in database: Database) async throws
        -> String
    {
        let token = SecretTokens.generate(prefix: "lk_iat_")
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO initial_access_tokens (tenant_id, token_id, token_hash, remaining_uses, expires_at, created_by)
                VALUES (\(tenant), \(UUID()), \(GatewayHarness.hasher.hash(token)), \(uses),
                        \(Date().addingTimeInterval(600)), 'test')
                """, logger: database.logger)
        }
        return token
    }
}
