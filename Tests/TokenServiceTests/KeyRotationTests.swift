import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import TokenService

/// Zero-downtime rotation: staged keys are published before they sign, activation moves signing, the
/// old key verifies until the longest lifetime of what it signed, then leaves the JWKS and the database.
@Suite struct KeyRotationTests {
    static func rotation(_ fixture: TokenServiceHarness) -> SigningKeyRotation {
        SigningKeyRotation(keys: TenantSigningKeys(envelope: fixture.settings.keyEnvelope), database: fixture.database)
    }

    /// Verifies `token` the way the sidecar (served JWKS) and the gateway (keys from Postgres, no cache) do.
    static func verifies(_ token: String, _ client: any TestClientProtocol, _ fixture: TokenServiceHarness) async throws
        -> (sidecar: Bool, gateway: Bool)
    {
        let sidecar = try SigningAlgorithmTests.sidecarVerifier(fixture, jwks: try await fixture.jwks(client))
        let slug = try #require(TenantSlug(rawValue: fixture.tenant))
        let bySidecar = (try? await sidecar.verify(token)) != nil
        let byGateway =
            (try? await SigningAlgorithmTests.gatewayVerifier(fixture).verify(
                authorization: "Bearer \(token)", for: slug)) != nil
        return (bySidecar, byGateway)
    }

    /// Grants until one is signed by `kid` (an activation reaches the service by notification), then checks
    /// that the following grants stay with it.
    static func firstTokenSignedBy(
        _ kid: String, _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, _ clientID: String,
        _ secret: String
    ) async throws -> ClientCredentials.Issued {
        var issued = try await ClientCredentials.token(client, fixture, clientID, secret)
        try await eventually("a grant signed by the activated key \(kid)", within: .seconds(10)) {
            issued = try await ClientCredentials.token(client, fixture, clientID, secret)
            return issued.kid == kid
        }
        for _ in 0..<3 { #expect(try await ClientCredentials.token(client, fixture, clientID, secret).kid == kid) }
        return issued
    }

    @Test func aStagedKeyIsPublishedFirstSignsAfterActivationAndTheOldOneRetiresOnTime() async throws {
        let policy = #"{"token_lifetimes":{"access_token":300,"id_token":900}}"#
        try await TokenServiceHarness.run(policy: policy) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "admin"))
            let first = try await ClientCredentials.token(client, fixture, "svc", secret)
            let oldKid = try #require(first.kid)
            let rotation = Self.rotation(fixture)

            let staged = try await rotation.rotate(tenant: fixture.tenant, algorithm: nil, actor: "ops@example.test")
                .key
            #expect(staged.status == .next && staged.algorithm == "ES256" && staged.stagedBy == "ops@example.test")
            #expect(Set(try await fixture.jwks(client).keys.compactMap(\.kid)) == [oldKid, staged.kid])
            #expect(try await ClientCredentials.token(client, fixture, "svc", secret).kid == oldKid)
            // Not published long enough yet: nothing moves.
            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .seconds(3600)).isEmpty)
            #expect(try await ClientCredentials.token(client, fixture, "svc", secret).kid == oldKid)

            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .zero).activated == staged.kid)
            // The service hears of the activation by notification, within moments, and signs with the new key.
            let second = try await Self.firstTokenSignedBy(staged.kid, client, fixture, "svc", secret)
            #expect(try await Self.verifies(second.accessToken, client, fixture) == (true, true))
            // Tokens the old key signed still verify while it retires.
            #expect(try await Self.verifies(first.accessToken, client, fixture) == (true, true))
            let keys = try await rotation.list(tenant: fixture.tenant)
            let retiring = try #require(keys.first { $0.kid == oldKid })
            let active = try #require(keys.first { $0.kid == staged.kid })
            #expect(retiring.lifecycleName() == "retiring" && active.lifecycleName() == "active")
            // Retired for the longest lifetime it signed for (ID tokens, 900 s) plus the margin.
            let retireAfter = try #require(retiring.publishUntil).timeIntervalSince(try #require(active.activatedAt))
            #expect(abs(retireAfter - 960) < 5, "\(retireAfter)")

            // The retire time passes (moved instead of waited for).
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    "UPDATE signing_keys SET publish_until = now() - interval '1 second' WHERE kid = \(oldKid)",
                    logger: fixture.database.logger)
            }
            #expect(try await fixture.jwks(client).keys.compactMap(\.kid) == [staged.kid])
            #expect(try await Self.verifies(first.accessToken, client, fixture) == (false, false))
            #expect(try await Self.verifies(second.accessToken, client, fixture) == (true, true))
            // The service's own lifecycle job may advance first and delete it; either way it is gone once.
            let deleted = try await rotation.advance(tenant: fixture.tenant, publishDelay: .zero).deleted
            #expect(deleted == [oldKid] || deleted.isEmpty)
            #expect(try await rotation.list(tenant: fixture.tenant).map(\.kid) == [staged.kid])
        }
    }

    @Test func changingThePolicyAlgorithmStagesThenActivatesAKeyOfThatAlgorithm() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            let first = try await ClientCredentials.token(client, fixture, "svc", secret)
            #expect(try CompactJWS(parsing: first.accessToken).header.alg == "ES256")
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                var policy = TenantPolicy()
                policy.signingAlgorithm = .edDSA
                // Grants issue only scopes the policy allows; keep the ones the test's client uses.
                policy.allowedScopes = TokenServiceHarness.testScopes
                _ = try await TenantPolicyRecords(logger: fixture.database.logger)
                    .updatePolicy(fixture.tenant, policy: policy, actor: "admin-client", on: connection)
            }
            #expect(try await Self.dueTenants(fixture).contains(fixture.tenant))
            let rotation = Self.rotation(fixture)
            // This pass stages it (or the lifecycle job of another app on the test database just did).
            _ = try await rotation.advance(tenant: fixture.tenant, publishDelay: .seconds(3600))
            let stagedKeys = try await rotation.list(tenant: fixture.tenant).filter { $0.status == .next }
            #expect(stagedKeys.map(\.algorithm) == ["EdDSA"] && stagedKeys.map(\.stagedBy) == ["policy v2"])
            let staged = try #require(stagedKeys.first?.kid)
            // Idempotent: a second pass (another replica) stages nothing more.
            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .seconds(3600)).isEmpty)
            #expect(try await !Self.dueTenants(fixture).contains(fixture.tenant))
            #expect(try await Self.discoveredAlgorithms(client, fixture) == ["ES256", "EdDSA"])
            #expect(
                try CompactJWS(parsing: try await ClientCredentials.token(client, fixture, "svc", secret).accessToken)
                    .header.alg == "ES256")

            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .zero).activated == staged)
            let after = try await Self.firstTokenSignedBy(staged, client, fixture, "svc", secret)
            #expect(try CompactJWS(parsing: after.accessToken).header.alg == "EdDSA")
            #expect(try await Self.discoveredAlgorithms(client, fixture) == ["EdDSA", "ES256"])
            #expect(try await fixture.verifyAccessToken(first.accessToken, client: client).clientID == "svc")
            #expect(try await rotation.advance(tenant: fixture.tenant, publishDelay: .zero).isEmpty)
        }
    }

    @Test func concurrentRotationsStageOneKeyAndRecordTheActor() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            _ = try await ClientCredentials.token(client, fixture, "svc", secret)
            let rotation = Self.rotation(fixture)
            let attempt: @Sendable (String) async -> Result<SigningKeyRotation.Rotation, any Error> = { actor in
                do {
                    return .success(try await rotation.rotate(tenant: fixture.tenant, algorithm: .rs256, actor: actor))
                } catch {
                    return .failure(error)
                }
            }
            async let one = attempt("admin-one")
            async let two = attempt("admin-two")
            let results = await [one, two]
            let winners = results.compactMap { try? $0.get() }
            #expect(winners.count == 1)
            for case .failure(let error) in results {
                #expect(
                    (error as? SigningKeyRotationError).map { if case .alreadyStaged = $0 { true } else { false } }
                        == true, "\(error)")
            }
            let winner = try #require(winners.first)
            let keys = try await rotation.list(tenant: fixture.tenant)
            #expect(keys.filter { $0.status == .next }.map(\.kid) == [winner.key.kid])
            #expect(winner.key.algorithm == "RS256" && winner.policyVersion == 2)
            let changedBy = try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                let rows = try await connection.query(
                    "SELECT changed_by FROM tenant_policy_versions WHERE tenant_id = \(fixture.tenant) AND version = 2",
                    logger: fixture.database.logger)
                var actors: [String] = []
                for try await actor in rows.decode(String.self) { actors.append(actor) }
                return actors
            }
            #expect(changedBy == [try #require(winner.key.stagedBy)])
        }
    }

    @Test func unsupportedAlgorithmsAndUnknownTenantsAreRefused() async throws {
        try await TokenServiceHarness.run { _, fixture in
            let rotation = Self.rotation(fixture)
            await #expect(throws: SigningKeyRotationError.unsupportedAlgorithm("PS256")) {
                try await rotation.rotate(tenant: fixture.tenant, algorithm: .ps256, actor: "a")
            }
            await #expect(throws: SigningKeyRotationError.unknownTenant) {
                try await rotation.rotate(tenant: TestEnvironment.uniqueTenant("none"), algorithm: nil, actor: "a")
            }
            let keys = try await rotation.list(tenant: fixture.tenant)
            #expect(keys.isEmpty)
        }
    }

    static func dueTenants(_ fixture: TokenServiceHarness, publishDelay: Duration = .seconds(3600)) async throws
        -> [String]
    {
        var configuration = try TestEnvironment.systemDatabase()
        configuration.database = fixture.databaseName
        return try await withPostgresClient(configuration) { client in
            try await SigningKeyRotation.tenantsWithDueWork(
                publishDelay: publishDelay, limit: 100_000,
                systemDatabase: Database(client: client, logger: TestEnvironment.logger))
        }
    }

    static func discoveredAlgorithms(_ client: any TestClientProtocol, _ fixture: TokenServiceHarness) async throws
        -> [String]?
    {
        try await client.execute(uri: "/t/\(fixture.tenant)/.well-known/openid-configuration", method: .get) {
            response in
            TokenRequest.json(response)["id_token_signing_alg_values_supported"] as? [String]
        }
    }
}

/// The background job itself, in a database of its own (it acts on every tenant it finds).
@Suite struct SigningKeyLifecycleServiceTests {
    @Test func runsActivateStagedKeysAndFollowPolicyChangesAcrossTenants() async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            var app = try TestEnvironment.appDatabase()
            app.database = scratch.database
            var system = try TestEnvironment.systemDatabase()
            system.database = scratch.database
            // The whole suite creates and migrates scratch databases meanwhile; a statement of this test
            // once waited past the 5 s default on a loaded machine.
            app.statementTimeoutMilliseconds = 30_000
            system.statementTimeoutMilliseconds = 30_000
            try await withPostgresClient(app) { appClient in
                try await withPostgresClient(system) { systemClient in
                    let database = Database(client: appClient, logger: TestEnvironment.logger)
                    let keys = TenantSigningKeys(
                        envelope: try KeyEnvelope(configuration: KeyMaterial.generateConfigurationValue()))
                    let rotation = SigningKeyRotation(keys: keys, database: database)
                    let (rotating, switching, idle) = ("rotating", "switching", "idle")
                    for (tenant, policy) in [
                        (rotating, "{}"), (switching, #"{"signing_algorithm":"RS256"}"#), (idle, "{}"),
                    ] {
                        try await TestDatabase.createTenant(tenant, in: database, policy: policy)
                        try await database.withTenantTransaction(tenant) { connection in
                            try await keys.createKey(
                                tenant: tenant, status: .active, on: connection, logger: database.logger)
                        }
                    }
                    let staged = try await rotation.rotate(tenant: rotating, algorithm: nil, actor: "ops").key.kid
                    let service = SigningKeyLifecycleService(
                        rotation: rotation,
                        systemDatabase: Database(client: systemClient, logger: TestEnvironment.logger),
                        interval: .milliseconds(50), publishDelay: .zero)

                    let firstRun = try await service.runOnce()
                    #expect(Set(firstRun.keys) == [rotating, switching])
                    #expect(firstRun[rotating]?.activated == staged)
                    let switched = try #require(firstRun[switching]?.staged)
                    #expect(
                        try await rotation.list(tenant: switching).first { $0.kid == switched }?.algorithm == "RS256")

                    // The running service finishes the switch on its own.
                    let group = ServiceGroup(configuration: .init(services: [service], logger: TestEnvironment.logger))
                    try await withThrowingTaskGroup(of: Void.self) { tasks in
                        tasks.addTask { try await group.run() }
                        _ = try await eventually(within: .seconds(30)) {
                            try await rotation.list(tenant: switching).first(where: { $0.status == .active })?.kid
                                == switched
                        }
                        await group.triggerGracefulShutdown()
                        try await tasks.waitForAll()
                    }
                    #expect(try await rotation.list(tenant: switching).first { $0.status == .active }?.kid == switched)
                    #expect(try await service.runOnce().isEmpty)
                    #expect(try await rotation.list(tenant: idle).map(\.status) == [.active])
                }
            }
        }
    }
}
