import Foundation
import LatchkeyCore
import LatchkeyPersistence
import PostgresNIO

/// The benchmark tenant: initial access tokens only, rate limits raised far above what the run can
/// reach (they are still counted on every request), no per-user cap, and one template.
enum Seeding {
    static let tenant = "bench"
    static let templateID = "bench-app"
    static let policy = #"""
        {"registration_mechanisms":["initial_access_token"],"max_clients_per_user":0,
         "rate_limits":{"registration":{"per_tenant_per_minute":100000000,"per_source_per_minute":100000000}}}
        """#
    static let templateMetadata = #"""
        {"redirect_uris":["com.example.bench:/cb"],"token_endpoint_auth_method":"none",
         "grant_types":["authorization_code","refresh_token"],"response_types":["code"],"application_type":"native",
         "scope":"openid offline_access","client_name":"Bench app","software_id":"bench-app","dpop_bound_access_tokens":true}
        """#

    /// Creates the tenant and template; returns one initial access token per connection (each with
    /// plenty of uses), so connections do not queue on one token row.
    static func seed(_ database: Database, hasher: KeyedHasher, connections: Int) async throws -> [String] {
        let tokens = (0..<connections).map { _ in SecretTokens.generate(prefix: "lk_iat_") }
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "INSERT INTO tenants (tenant_id, display_name, policy) VALUES (\(tenant), 'Benchmark', \(policy)::jsonb)",
                logger: database.logger)
            try await connection.query(
                """
                INSERT INTO client_templates (tenant_id, software_id, metadata, overridable_fields)
                VALUES (\(tenant), \(templateID), \(templateMetadata)::jsonb, ARRAY['client_name'])
                """, logger: database.logger)
            for token in tokens {
                try await connection.query(
                    """
                    INSERT INTO initial_access_tokens (tenant_id, token_id, token_hash, remaining_uses, expires_at, created_by)
                    VALUES (\(tenant), \(UUID()), \(hasher.hash(token)), 100000000, now() + interval '1 day', 'benchmark')
                    """, logger: database.logger)
            }
        }
        return tokens
    }
}
