import Foundation
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// The token service's janitor against the real schema and roles.
@Suite(.serialized) struct JanitorTests {
    /// Runs `body` with a janitor on the system role of the fixture's database.
    static func withJanitor(
        _ fixture: TokenServiceHarness, batchSize: Int = 1000, maximumBatches: Int = 20,
        _ body: (TokenServiceJanitor) async throws -> Void
    ) async throws {
        var configuration = try TestEnvironment.systemDatabase()
        configuration.database = fixture.databaseName
        try await withPostgresClient(configuration) { client in
            let janitor = TokenServiceJanitor(
                systemDatabase: Database(client: client, logger: TestEnvironment.logger), interval: .seconds(3600),
                batchSize: batchSize, maximumBatches: maximumBatches)
            try await body(janitor)
        }
    }

    /// Rows of every kind the janitor looks at, one expired long ago and one still in use each.
    static func seed(_ fixture: TokenServiceHarness, client: String, user: UUID) async throws {
        let other = try await fixture.insertUser(username: "bob")
        let old = Date().addingTimeInterval(-7200)
        let soon = Date().addingTimeInterval(600)
        let family = UUID()
        try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
            let logger = fixture.database.logger
            let tenant = fixture.tenant
            for (label, expires) in [("old", old), ("live", soon)] {
                try await connection.query(
                    """
                    INSERT INTO authorization_codes (tenant_id, code_hash, client_id, user_id, redirect_uri, scope,
                        auth_time, expires_at)
                    VALUES (\(tenant), \("code-" + label), \(client), \(user), 'com.example.app:/cb', 'openid', now(), \(expires))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, expires_at)
                    VALUES (\(tenant), \("jti-" + label), \(client), \(user), \(expires))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, client_id, user_id, scope, expires_at)
                    VALUES (\(tenant), \("rt-" + label), \(label == "old" ? family : UUID()), \(client), \(user), 'openid', \(expires))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO sso_sessions (tenant_id, session_hash, user_id, auth_time, expires_at)
                    VALUES (\(tenant), \("sso-" + label), \(user), now(), \(expires))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO admin_sessions (tenant_id, session_hash, client_id, client_tenant_id, expires_at)
                    VALUES (\(tenant), \("adm-" + label), \(client), \(tenant), \(expires))
                    """, logger: logger)
                let stamp = label == "old" ? Date().addingTimeInterval(-3 * 86400) : Date()
                try await connection.query(
                    """
                    INSERT INTO login_attempts (tenant_id, kind, subject, last_failure_at)
                    VALUES (\(tenant), 'account', \("acct-" + label), \(stamp))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO sign_in_sources (tenant_id, account, source, failures, last_failure_at)
                    VALUES (\(tenant), \("acct-" + label), '192.0.2.1', 4, \(stamp))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO sign_in_accounts (tenant_id, account, window_started_at)
                    VALUES (\(tenant), \("acct-" + label), \(stamp))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO consents (tenant_id, user_id, client_id, scope, expires_at)
                    VALUES (\(tenant), \(label == "old" ? user : other), \(client), 'openid', \(expires))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO sign_in_rate_limits (tenant_id, limit_key, window_start)
                    VALUES (\(tenant), \("key-" + label), \(stamp))
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO registration_rate_limits (tenant_id, limit_key, window_start)
                    VALUES (\(tenant), \("key-" + label), \(stamp))
                    """, logger: logger)
                // An Idempotency-Key answers until it expires: the old one expired a second ago.
                let keyExpiry = label == "old" ? Date().addingTimeInterval(-1) : soon
                try await connection.query(
                    """
                    INSERT INTO registration_idempotency_keys (tenant_id, principal, key_hash, request_hash, state,
                        expires_at)
                    VALUES (\(tenant), 'open:192.0.2.1', \("idem-" + label), 'body', 'in_flight', \(keyExpiry))
                    """, logger: logger)
            }
            // A session revoked long ago goes although it has not expired; a known address stays.
            try await connection.query(
                """
                INSERT INTO sso_sessions (tenant_id, session_hash, user_id, auth_time, expires_at, revoked_at)
                VALUES (\(tenant), 'sso-ended', \(user), now(), \(soon), \(old))
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO sign_in_sources (tenant_id, account, source, succeeded_at)
                VALUES (\(tenant), 'acct-known', '192.0.2.9', now() - interval '10 days')
                """, logger: logger)
        }
    }

    static let tables = [
        "authorization_codes", "issued_access_tokens", "refresh_tokens", "sso_sessions", "admin_sessions",
        "login_attempts", "sign_in_sources", "sign_in_accounts", "sign_in_rate_limits", "consents",
        "registration_rate_limits", "registration_idempotency_keys",
    ]

    @Test func deletesWhatIsPastItsUseAndKeepsWhatIsLive() async throws {
        try await TokenServiceHarness.run { _, fixture in
            _ = try await fixture.insertPublicApp()
            let user = try await fixture.insertUser()
            try await Self.seed(fixture, client: "app", user: user)
            try await Self.withJanitor(fixture) { janitor in
                let deleted = try await janitor.runOnce()
                for table in Self.tables { #expect((deleted[table] ?? 0) >= 1, "\(table)") }
            }
            let remaining = [
                "authorization_codes": 1, "issued_access_tokens": 1, "refresh_tokens": 1, "sso_sessions": 1,
                "admin_sessions": 1, "login_attempts": 1, "sign_in_sources": 2, "sign_in_accounts": 1,
                "sign_in_rate_limits": 1, "consents": 1, "registration_rate_limits": 1,
                "registration_idempotency_keys": 1,
            ]
            for (table, expected) in remaining {
                #expect(try await fixture.count("SELECT count(*)::int8 FROM \(table)") == expected, "\(table)")
            }
            #expect(
                try await fixture.count("SELECT count(*)::int8 FROM sso_sessions WHERE session_hash = 'sso-live'") == 1)
        }
    }

    @Test func oneRunDeletesAtMostItsBatchesPerTable() async throws {
        try await TokenServiceHarness.run { _, fixture in
            _ = try await fixture.insertPublicApp()
            let user = try await fixture.insertUser()
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, expires_at)
                    SELECT \(fixture.tenant), 'bulk-' || n, 'app', \(user), now() - interval '2 hours'
                    FROM generate_series(1, 7) AS n
                    """, logger: fixture.database.logger)
            }
            try await Self.withJanitor(fixture, batchSize: 2, maximumBatches: 2) { janitor in
                var janitor = janitor
                janitor.tasks = JanitorTask.all.filter { $0.table == "issued_access_tokens" }
                let first = try await janitor.runOnce()
                #expect(first["issued_access_tokens"] == 4)
                // Later runs finish the table (other suites' rows may be swept along; none are this old).
                var runs = 0
                while try await fixture.count("SELECT count(*)::int8 FROM issued_access_tokens") > 0, runs < 5 {
                    try await janitor.runOnce()
                    runs += 1
                }
                #expect(try await fixture.count("SELECT count(*)::int8 FROM issued_access_tokens") == 0)
            }
        }
    }

    @Test func signInRecordsLastLoginAt() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM users WHERE last_login_at IS NOT NULL") == 0)
            var browser = PageBrowser(client)
            let redirect = try await AuthorizeFlowTests.signIn(
                &browser, fixture, app: app, verifier: PKCE.generateVerifier())
            #expect(redirect.status == 302)
            #expect(
                try await fixture.count(
                    "SELECT count(*)::int8 FROM users WHERE last_login_at > now() - interval '1 minute'") == 1)
        }
    }
}
