import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO

/// SQL of the admin API; every call runs in the caller's tenant-scoped transaction (RLS).
enum AdminStore {
    /// Whether any tenant exists (the bootstrap key may only create the first one). Needs the system role.
    /// Serialises every use of the bootstrap key across replicas until the caller's transaction ends, so
    /// the checks below and the insert that follows cannot interleave with another bootstrap request.
    static func lockBootstrap(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.bootstrapLock))::text", logger: logger)
    }

    /// The advisory lock key of bootstrap (an arbitrary constant of this application).
    static let bootstrapLock: Int64 = 0x4C4B_424F_4F54  // "LKBOOT"

    /// Whether an administrator client (a static client with the `admin` scope) exists in any tenant: once
    /// one does, the bootstrap key has done its job and is refused. Runs as the cross-tenant system role.
    static func anyAdminClientExists(on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM clients WHERE client_kind = 'static'
                           AND ' ' || coalesce(metadata->>'scope', '') || ' ' LIKE '% admin %')
            """, logger: logger)
        for try await exists in rows.decode(Bool.self) { return exists }
        return false
    }

    /// Every tenant, by id. Needs the system role (cross-tenant).
    static func tenants(on connection: PostgresConnection, logger: Logger) async throws -> [TenantSummaryView] {
        let rows = try await connection.query(
            "SELECT tenant_id, display_name, status, policy_version, created_at FROM tenants ORDER BY tenant_id",
            logger: logger)
        var tenants: [TenantSummaryView] = []
        for try await (id, name, status, version, created) in rows.decode((String, String, String, Int, Date).self) {
            tenants.append(
                TenantSummaryView(
                    tenantID: id, displayName: name, status: status, policyVersion: version, createdAt: created))
        }
        return tenants
    }

    static func anyTenantExists(on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query("SELECT EXISTS (SELECT 1 FROM tenants)", logger: logger)
        for try await exists in rows.decode(Bool.self) { return exists }
        return false
    }

    /// Inserts the tenant and version 1 of its policy; false when the id is taken.
    static func createTenant(
        _ tenant: String, displayName: String, policy: TenantPolicy, actor: String, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Bool {
        let json = String(decoding: try LatchkeyJSON.encode(policy), as: UTF8.self)
        let rows = try await connection.query(
            """
            INSERT INTO tenants (tenant_id, display_name, policy, policy_version) VALUES (\(tenant), \(displayName), \(json)::jsonb, 1)
            ON CONFLICT (tenant_id) DO NOTHING RETURNING tenant_id
            """, logger: logger)
        var created = false
        for try await _ in rows.decode(String.self) { created = true }
        guard created else { return false }
        try await connection.query(
            """
            INSERT INTO tenant_policy_versions (tenant_id, version, policy, changed_by)
            VALUES (\(tenant), 1, \(json)::jsonb, \(actor))
            """, logger: logger)
        return true
    }

    /// Stores `policy` as the next version; returns that version, nil when the tenant does not exist.
    static func updatePolicy(
        _ tenant: String, policy: TenantPolicy, actor: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int? {
        try await TenantPolicyRecords(logger: logger).updatePolicy(tenant, policy: policy, actor: actor, on: connection)
    }

    /// Number of static clients of the tenant (the bootstrap key may only create the first).
    static func staticClientCount(_ tenant: String, on connection: PostgresConnection, logger: Logger) async throws
        -> Int
    {
        let rows = try await connection.query(
            "SELECT count(*)::int FROM clients WHERE tenant_id = \(tenant) AND client_kind = 'static'", logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// Inserts or replaces a template; returns its new version.
    static func upsertTemplate(
        _ template: ClientTemplate, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        let json = String(decoding: try LatchkeyJSON.encode(template.metadata), as: UTF8.self)
        let rows = try await connection.query(
            """
            INSERT INTO client_templates (tenant_id, software_id, metadata, overridable_fields)
            VALUES (\(template.tenant.rawValue), \(template.id), \(json)::jsonb, \(template.overridableFields))
            ON CONFLICT (tenant_id, software_id) DO UPDATE
               SET metadata = EXCLUDED.metadata, overridable_fields = EXCLUDED.overridable_fields,
                   version = client_templates.version + 1, updated_at = now()
            RETURNING version
            """, logger: logger)
        for try await version in rows.decode(Int.self) { return version }
        return 1
    }

    /// Every template of the tenant.
    static func templates(_ tenant: String, on connection: PostgresConnection, logger: Logger) async throws
        -> [TemplateView]
    {
        let rows = try await connection.query(
            """
            SELECT software_id, metadata::text, overridable_fields, version FROM client_templates
            WHERE tenant_id = \(tenant) ORDER BY software_id
            """, logger: logger)
        var templates: [TemplateView] = []
        for try await (id, metadata, fields, version) in rows.decode((String, String, [String], Int).self) {
            templates.append(
                TemplateView(
                    softwareID: id, version: version,
                    metadata: try LatchkeyJSON.decode(ClientMetadata.self, from: Data(metadata.utf8)),
                    overridableFields: fields))
        }
        return templates
    }

    /// Inserts an active user; false when the username (case-insensitive) is taken.
    static func createUser(
        _ tenant: String, id: UUID, username: String, email: String?, emailVerified: Bool = false, passwordHash: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO users (tenant_id, user_id, username, email, email_verified, password_hash)
            VALUES (\(tenant), \(id), \(username), \(email), \(emailVerified), \(passwordHash))
            ON CONFLICT (tenant_id, lower(username)) DO NOTHING RETURNING user_id
            """, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    /// The username of `user`, nil when the tenant has no such user.
    static func username(of user: UUID, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await connection.query("SELECT username FROM users WHERE user_id = \(user)", logger: logger)
        for try await name in rows.decode(String.self) { return name }
        return nil
    }

    /// Replaces a user's password hash; false when the tenant has no such user.
    static func setPassword(of user: UUID, hash: String, on connection: PostgresConnection, logger: Logger)
        async throws -> Bool
    {
        let rows = try await connection.query(
            "UPDATE users SET password_hash = \(hash), updated_at = now() WHERE user_id = \(user) RETURNING 1",
            logger: logger)
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Stores a new initial access token (its hash only).
    static func createInitialAccessToken(
        _ tenant: String, id: UUID, hash: String, uses: Int, expiresAt: Date, description: String?, actor: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            INSERT INTO initial_access_tokens (tenant_id, token_id, token_hash, description, remaining_uses, expires_at, created_by)
            VALUES (\(tenant), \(id), \(hash), \(description), \(uses), \(expiresAt), \(actor))
            """, logger: logger)
    }

    /// Revokes an initial access token; false when there is no such live token.
    static func revokeInitialAccessToken(
        _ tenant: String, id: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            UPDATE initial_access_tokens SET revoked_at = now()
            WHERE tenant_id = \(tenant) AND token_id = \(id) AND revoked_at IS NULL RETURNING token_id
            """, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }
}
