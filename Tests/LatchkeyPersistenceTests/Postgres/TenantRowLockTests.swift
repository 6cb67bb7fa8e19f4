import Foundation
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyPersistence

/// A grant writes its access-token record and its outbox row without locking the tenant's row (concurrent
/// grants of one tenant would otherwise all rewrite that row's lock); deleting a tenant still removes those
/// rows, and its refresh tokens with its clients.
@Suite struct TenantRowLockTests {
    private func insertClient(_ tenant: String, _ clientID: String, in database: Database) async throws {
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO clients (tenant_id, client_id, client_type, application_type, registration_mechanism,
                                     client_kind, metadata)
                VALUES (\(tenant), \(clientID), 'confidential', 'web', 'admin', 'static', '{}')
                """, logger: database.logger)
        }
    }

    /// One grant's writes through the grant function, in `connection`'s current transaction.
    private func grant(_ tenant: String, _ clientID: String, on connection: PostgresConnection, logger: Logger)
        async throws -> Bool
    {
        let rows = try await connection.query(
            """
            SELECT issue_access_token(\(tenant), \(clientID), NULL, \(UUID().uuidString), NULL, NULL,
                now() + interval '1 hour', \(UUID()), 'latchkey.tokens', \(clientID), 'TokenIssued', '{}', NULL, NULL)
            """, logger: logger)
        var written = false
        for try await value in rows.decode(Bool.self) { written = value }
        return written
    }

    private func insertRefreshToken(_ tenant: String, _ clientID: String, in database: Database) async throws {
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, client_id, scope, expires_at)
                VALUES (\(tenant), \(UUID().uuidString), \(UUID()), \(clientID), 'openid', now() + interval '1 day')
                """, logger: database.logger)
        }
    }

    @Test func aGrantInFlightLeavesItsTenantsRowFreeToLock() async throws {
        try await TestDatabase.withApp { database in
            let tenant = TestEnvironment.uniqueTenant("lock")
            try await TestDatabase.createTenant(tenant, in: database)
            try await insertClient(tenant, "svc", in: database)
            try await database.client.withConnection { granting in
                try await granting.query("BEGIN", logger: database.logger)
                let written = try await grant(tenant, "svc", on: granting, logger: database.logger)
                #expect(written)
                // While the grant's transaction is open, another transaction can lock the tenant's row for update,
                // so the grant holds no lock on it.
                do {
                    let locked = try await database.withTenantTransaction(tenant) { connection in
                        // The rows are read: a lock refused while they stream is reported only to the reader.
                        try await connection.query(
                            "SELECT 1 FROM tenants WHERE tenant_id = \(tenant) FOR UPDATE NOWAIT",
                            logger: database.logger
                        ).decode(Int.self).reduce(0) { count, _ in count + 1 }
                    }
                    #expect(locked == 1)
                } catch {
                    Issue.record(
                        "the tenant's row is locked by the grant in flight: \(error.postgresSQLState ?? "\(error)")")
                }
                try await granting.query("ROLLBACK", logger: database.logger)
            }
        }
    }

    @Test func deletingATenantRemovesItsTokenRecordsOutboxRowsAndRefreshTokens() async throws {
        try await TestDatabase.withScratchDatabase { owner in
            try await TestDatabase.migrate(owner)
            var app = try TestEnvironment.appDatabase()
            app.database = owner.database
            let (gone, kept) = (TestEnvironment.uniqueTenant("gone"), TestEnvironment.uniqueTenant("kept"))
            try await withPostgresClient(app) { client in
                let database = Database(client: client, logger: TestEnvironment.logger)
                for tenant in [gone, kept] {
                    try await TestDatabase.createTenant(tenant, in: database)
                    try await insertClient(tenant, "svc", in: database)
                    try await insertRefreshToken(tenant, "svc", in: database)
                    let written = try await client.withConnection { connection in
                        try await grant(tenant, "svc", on: connection, logger: database.logger)
                    }
                    #expect(written)
                }
            }
            try await withPostgresClient(owner) { client in
                let logger = TestEnvironment.logger
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: logger)
                    // Only a superuser can delete a tenant (no role has a policy for it). In this database of its
                    // own the owner does it instead, with the tables' owner exemption from Row-Level Security
                    // restored for this transaction.
                    for table in ["tenants", "clients", "issued_access_tokens", "outbox", "refresh_tokens"] {
                        try await connection.query(
                            PostgresQuery(unsafeSQL: "ALTER TABLE \(table) NO FORCE ROW LEVEL SECURITY"), logger: logger
                        )
                    }
                    try await connection.query("DELETE FROM tenants WHERE tenant_id = \(gone)", logger: logger)
                    for table in ["issued_access_tokens", "outbox", "refresh_tokens"] {
                        let rows = try await connection.query(
                            PostgresQuery(
                                unsafeSQL:
                                    "SELECT tenant_id, count(*)::int8 FROM \(table) GROUP BY tenant_id ORDER BY tenant_id"
                            ), logger: logger)
                        var counts: [String: Int64] = [:]
                        for try await (tenant, count) in rows.decode((String, Int64).self) { counts[tenant] = count }
                        #expect(counts == [kept: 1], "\(table)")
                    }
                    try await connection.query("ROLLBACK", logger: logger)
                }
            }
        }
    }
}
