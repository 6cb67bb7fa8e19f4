import Foundation
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyPersistence

@Suite struct RowLevelSecurityTests {
    private func insertUser(_ tenant: String, _ name: String, scope: String, in database: Database) async throws {
        try await database.withTenantTransaction(scope) { connection in
            try await connection.query(
                "INSERT INTO users (tenant_id, user_id, username) VALUES (\(tenant), \(UUID()), \(name))",
                logger: database.logger)
        }
    }

    private func usernames(scope: String?, in database: Database) async throws -> [String] {
        let body: (PostgresConnection) async throws -> [String] = { connection in
            // Deliberately no WHERE tenant_id: Row-Level Security alone must confine the result.
            let rows = try await connection.query(
                "SELECT username FROM users ORDER BY username", logger: database.logger)
            return try await rows.decode(String.self).reduce(into: []) { $0.append($1) }
        }
        if let scope { return try await database.withTenantTransaction(scope, body) }
        return try await database.withTransaction(body)
    }

    @Test func aQueryWithoutTenantFilterSeesOnlyTheCurrentTenant() async throws {
        try await TestDatabase.withApp { database in
            let a = TestEnvironment.uniqueTenant("a")
            let b = TestEnvironment.uniqueTenant("b")
            try await TestDatabase.createTenant(a, in: database)
            try await TestDatabase.createTenant(b, in: database)
            try await insertUser(a, "alice", scope: a, in: database)
            try await insertUser(b, "bob", scope: b, in: database)

            #expect(try await usernames(scope: a, in: database) == ["alice"])
            #expect(try await usernames(scope: b, in: database) == ["bob"])
            #expect(try await usernames(scope: nil, in: database).isEmpty)
        }
    }

    @Test func aWriteForAnotherTenantFails() async throws {
        try await TestDatabase.withApp { database in
            let a = TestEnvironment.uniqueTenant("a")
            let b = TestEnvironment.uniqueTenant("b")
            try await TestDatabase.createTenant(a, in: database)
            try await TestDatabase.createTenant(b, in: database)
            await #expect(throws: PSQLError.self) {
                try await insertUser(b, "mallory", scope: a, in: database)
            }
            // Moving a row to another tenant is refused too.
            try await insertUser(a, "carol", scope: a, in: database)
            await #expect(throws: PSQLError.self) {
                try await database.withTenantTransaction(a) { connection in
                    try await connection.query("UPDATE users SET tenant_id = \(b)", logger: database.logger)
                }
            }
            #expect(try await usernames(scope: b, in: database).isEmpty)
        }
    }

    @Test func theServiceRoleCannotBypassRowLevelSecurity() async throws {
        try await TestDatabase.withApp { database in
            let rows = try await database.client.query(
                "SELECT rolbypassrls, rolsuper FROM pg_roles WHERE rolname = current_user", logger: database.logger)
            for try await (bypass, superuser) in rows.decode((Bool, Bool).self) {
                #expect(!bypass)
                #expect(!superuser)
            }
        }
    }

    @Test func theSystemRoleCannotReadUsers() async throws {
        _ = try await TestDatabase.withSystem { database in
            await #expect(throws: PSQLError.self) {
                try await database.withTransaction { connection in
                    try await connection.query("SELECT count(*) FROM users", logger: database.logger)
                }
            }
        }
    }
}
