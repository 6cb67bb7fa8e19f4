import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Initial access tokens and client templates as registration reads them.
enum RegistrationCredentialStore {
    /// Uses one count of the initial access token with this hash, atomically; nil when it is
    /// unknown, revoked, expired or used up.
    static func consumeInitialAccessToken(
        hash: String, tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID? {
        let rows = try await connection.query(
            """
            UPDATE initial_access_tokens SET remaining_uses = remaining_uses - 1
            WHERE tenant_id = \(tenant) AND token_hash = \(hash) AND remaining_uses > 0
              AND revoked_at IS NULL AND expires_at > now()
            RETURNING token_id
            """, logger: logger)
        for try await id in rows.decode(UUID.self) { return id }
        return nil
    }

    /// The id of the usable initial access token with this hash, used up or not: the principal of an
    /// idempotent registration, whose replay must not take another use. Nil when unknown, revoked or expired.
    static func initialAccessTokenID(
        hash: String, tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID? {
        let rows = try await connection.query(
            """
            SELECT token_id FROM initial_access_tokens
            WHERE tenant_id = \(tenant) AND token_hash = \(hash) AND revoked_at IS NULL AND expires_at > now()
            """, logger: logger)
        for try await id in rows.decode(UUID.self) { return id }
        return nil
    }

    /// The template with this `software_id`, if the tenant has one. `share` locks it until the
    /// transaction ends, so a template update (which walks the template's instances) waits for a
    /// registration that read the old version, and never misses the instance it creates.
    static func template(
        softwareID: String, tenant: String, share: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> ClientTemplate? {
        var query: PostgresQuery = """
            SELECT metadata::text, overridable_fields, version FROM client_templates
            WHERE tenant_id = \(tenant) AND software_id = \(softwareID)
            """
        if share { query.sql += " FOR SHARE" }
        let rows = try await connection.query(query, logger: logger)
        for try await (metadata, fields, version) in rows.decode((String, [String], Int).self) {
            guard let slug = TenantSlug(rawValue: tenant) else { return nil }
            return ClientTemplate(
                id: softwareID, tenant: slug,
                metadata: try LatchkeyJSON.decode(ClientMetadata.self, from: Data(metadata.utf8)),
                overridableFields: fields, version: version)
        }
        return nil
    }
}
