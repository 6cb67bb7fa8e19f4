import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Reads and versions tenant policies; callers run it in the tenant's transaction (RLS).
public struct TenantPolicyRecords: Sendable {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The tenant's policy and its version, the row locked until the transaction ends; nil when unknown.
    public func lockedPolicy(_ tenant: String, on connection: PostgresConnection) async throws -> (TenantPolicy, Int)? {
        let rows = try await connection.query(
            "SELECT policy::text, policy_version FROM tenants WHERE tenant_id = \(tenant) FOR UPDATE", logger: logger)
        for try await (json, version) in rows.decode((String, Int).self) {
            return (try LatchkeyJSON.makeDecoder().decode(TenantPolicy.self, from: Data(json.utf8)), version)
        }
        return nil
    }

    /// Stores `policy` as the next version, recording `actor`; returns that version, nil when the tenant does not exist.
    public func updatePolicy(_ tenant: String, policy: TenantPolicy, actor: String, on connection: PostgresConnection)
        async throws -> Int?
    {
        let json = String(decoding: try LatchkeyJSON.encode(policy), as: UTF8.self)
        let rows = try await connection.query(
            """
            UPDATE tenants SET policy = \(json)::jsonb, policy_version = policy_version + 1, updated_at = now()
            WHERE tenant_id = \(tenant) RETURNING policy_version
            """, logger: logger)
        var version: Int?
        for try await value in rows.decode(Int.self) { version = value }
        guard let version else { return nil }
        try await connection.query(
            """
            INSERT INTO tenant_policy_versions (tenant_id, version, policy, changed_by)
            VALUES (\(tenant), \(version), \(json)::jsonb, \(actor))
            """, logger: logger)
        return version
    }
}
