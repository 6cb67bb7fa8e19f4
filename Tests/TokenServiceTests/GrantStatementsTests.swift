import Foundation
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// The usual code redemption and refresh (DPoP-bound public client, its client record cached) are one statement
/// each: the code or token carries its state, sealed. A client_credentials grant is one statement.
/// The client record and the tenant's signing key come from caches that PostgreSQL's notifications keep current.
@Suite struct GrantStatementsTests {
    @Test func aCodeRedemptionARefreshAndAClientCredentialsGrantAreOneStatementEach() async throws {
        try await TestDatabase.withScratchDatabase { owner in
            try await TestDatabase.migrate(owner)
            var appConfiguration = try TestEnvironment.appDatabase()
            appConfiguration.database = owner.database
            let appRole = appConfiguration.username
            let cluster = try EmbeddedKafkaCluster(brokers: 1)
            defer { cluster.shutdown() }
            let serviceSettings = try await TestServiceSettings.make(
                .tokenService, kafkaBrokers: cluster.bootstrapServers, database: owner.database)
            let settings = try TokenServiceHarness.makeSettings()
            try await withPostgresClient(appConfiguration) { client in
                let fixture = TokenServiceHarness(
                    tenant: TestEnvironment.uniqueTenant("rs"), settings: settings,
                    database: Database(client: client, logger: TestEnvironment.logger), databaseName: owner.database)
                try await TestDatabase.createTenant(
                    fixture.tenant, in: fixture.database, policy: TokenServiceHarness.withTestScopes("{}"))
                let app = try buildApplication(
                    settings: serviceSettings, tokenSettings: settings, logger: TestServiceSettings.logger)
                try await app.journaledTest(.live) { http in
                    var (native, token) = try await RefreshTokenGrantTests.signedIn(http, fixture)
                    let user = try await fixture.insertUser(username: "counted")
                    let codes = 5
                    // Sealed codes, as the authorization endpoint issues them: one statement each. Codes of random
                    // bits (as earlier versions issued): the row is read first, two.
                    for (sealed, perCode) in [(true, 1), (false, 2)] {
                        var prepared: [(code: String, verifier: String)] = []
                        for _ in 0..<codes {
                            let verifier = PKCE.generateVerifier()
                            prepared.append(
                                (
                                    try await fixture.insertCode(
                                        clientID: native.clientID, userID: user, verifier: verifier, sealed: sealed),
                                    verifier
                                ))
                        }
                        let beforeCodes = try await TestDatabase.statementsRun(by: appRole, in: owner.database)
                        for (code, verifier) in prepared {
                            let (status, json) = try await native.redeem(http, fixture, code: code, verifier: verifier)
                            #expect(status == 200, "\(json)")
                        }
                        let codeStatements =
                            try await TestDatabase.statementsRun(by: appRole, in: owner.database) - beforeCodes
                        // The batched last-use update may add one.
                        #expect(
                            codeStatements <= Int64(perCode * codes) + 1,
                            "\(codes) redemptions of sealed: \(sealed) codes ran \(codeStatements) statements")
                    }
                    // The first refresh also caches the client record.
                    token = try await Self.refreshed(native, token, http, fixture)
                    let refreshes = 5
                    let before = try await TestDatabase.statementsRun(by: appRole, in: owner.database)
                    for _ in 0..<refreshes { token = try await Self.refreshed(native, token, http, fixture) }
                    let statements = try await TestDatabase.statementsRun(by: appRole, in: owner.database) - before
                    // Sealed tokens, as every grant issues them: one each; the batched last-use update may add one.
                    #expect(
                        statements <= Int64(refreshes) + 1, "\(refreshes) refreshes ran \(statements) statements")
                    // A token of random bits (as earlier versions issued): its row is read first, and
                    // its successor is sealed.
                    let unsealed = SecretTokens.generate()
                    try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                        try await connection.query(
                            """
                            INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, generation, client_id, user_id,
                                                        scope, dpop_jkt, expires_at)
                            VALUES (\(fixture.tenant), \(settings.secretHasher.hash(unsealed)), \(UUID()), 0,
                                    \(native.clientID), \(user), 'openid', \(native.dpop.jkt), now() + interval '1 hour')
                            """, logger: fixture.database.logger)
                    }
                    let beforeUnsealed = try await TestDatabase.statementsRun(by: appRole, in: owner.database)
                    let successor = try await Self.refreshed(native, unsealed, http, fixture)
                    let unsealedStatements =
                        try await TestDatabase.statementsRun(by: appRole, in: owner.database) - beforeUnsealed
                    #expect(
                        unsealedStatements <= 3, "a refresh of an unsealed token ran \(unsealedStatements) statements")
                    let beforeSuccessor = try await TestDatabase.statementsRun(by: appRole, in: owner.database)
                    token = try await Self.refreshed(native, successor, http, fixture)
                    let successorStatements =
                        try await TestDatabase.statementsRun(by: appRole, in: owner.database) - beforeSuccessor
                    #expect(successorStatements <= 2, "its successor's refresh ran \(successorStatements) statements")
                    // A redeemed code and a rotated refresh token change no indexed column: their updates add no
                    // index entries.
                    for table in ["authorization_codes", "refresh_tokens"] {
                        let updates = try await TestDatabase.updates(of: table, in: owner.database, atLeast: 5)
                        #expect(updates.all >= 5 && updates.heapOnly == updates.all, "\(table): \(updates)")
                    }
                    native = try NativeApp(clientID: native.clientID)  // another key: the bound token is refused
                    #expect(try await native.refresh(http, fixture, token: token).1["error"] as? String != nil)

                    // client_credentials: the first grant caches the client record.
                    let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
                    _ = try await ClientCredentials.token(http, fixture, "svc", secret)
                    let grants = 5
                    let beforeGrants = try await TestDatabase.statementsRun(by: appRole, in: owner.database)
                    for _ in 0..<grants { _ = try await ClientCredentials.token(http, fixture, "svc", secret) }
                    let grantStatements =
                        try await TestDatabase.statementsRun(by: appRole, in: owner.database) - beforeGrants
                    // One each; the batched last-use update may add one.
                    #expect(
                        grantStatements <= Int64(grants) + 1, "\(grants) grants ran \(grantStatements) statements")
                }
            }
        }
    }

    /// The grant's statement is a named prepared statement: prepared once on a connection, then only bound and
    /// executed, and after the first few executions run on the plan PostgreSQL keeps instead of planned again.
    @Test func theGrantStatementIsPreparedOncePerConnectionAndNotPlannedOnEveryGrant() async throws {
        try await TokenServiceHarness.run { _, fixture in
            try await fixture.insertClient("svc", scope: "api")
            var configuration = try TestEnvironment.appDatabase()
            configuration.database = fixture.databaseName
            configuration.maximumConnections = 1  // every statement below on the connection queried at the end
            try await withPostgresClient(configuration) { client in
                let prepared = try await DirectGrant.prepare(fixture, "svc")
                let grant = DirectGrant(
                    issuer: prepared.issuer, request: prepared.request, tenant: prepared.tenant,
                    endpoints: prepared.endpoints, signer: prepared.signer,
                    database: Database(client: client, logger: TestEnvironment.logger))
                let grants = 12
                for _ in 0..<grants { _ = try await grant.issue() }
                let rows = try await client.query(
                    """
                    SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
                    WHERE statement LIKE '%issue_access_token(%'
                    """, logger: TestEnvironment.logger)
                var statements: [(name: String, generic: Int64, custom: Int64)] = []
                for try await row in rows.decode((String, Int64, Int64).self) { statements.append(row) }
                #expect(statements.count == 1, "\(statements)")
                let statement = try #require(statements.first)
                #expect(statement.generic + statement.custom == Int64(grants))
                // PostgreSQL plans a prepared statement for its first five executions, then keeps a generic plan
                // when it costs no more.
                #expect(statement.custom <= 5 && statement.generic >= Int64(grants - 5), "\(statement)")
            }
        }
    }

    @Test func everyGrantStatementDeclaresTheTypeOfEachParameter() {
        #expect(PreparedStatementShape.parameterCount("SELECT f($1, $12) FROM g($3)") == 12)
        #expect(PreparedStatementShape.declaresEveryParameter(IssueAccessTokenStatement.self))
        #expect(PreparedStatementShape.declaresEveryParameter(RotateRefreshTokenStatement.self))
        #expect(PreparedStatementShape.declaresEveryParameter(RedeemAuthorizationCodeStatement.self))
        #expect(PreparedStatementShape.declaresEveryParameter(AuthorizationCodeStateStatement.self))
        #expect(PreparedStatementShape.declaresEveryParameter(RefreshTokenStateStatement.self))
    }

    static func refreshed(
        _ native: NativeApp, _ token: String, _ http: any TestClientProtocol, _ fixture: TokenServiceHarness
    ) async throws -> String {
        let (status, json) = try await native.refresh(http, fixture, token: token)
        #expect(status == 200, "\(json)")
        return try #require(json["refresh_token"] as? String)
    }
}
