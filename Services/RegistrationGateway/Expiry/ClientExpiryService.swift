import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO
import ServiceLifecycle

/// Expires dynamic clients unused for longer than their tenant's `inactive_client_ttl` (0 = never):
/// status `expired`, refresh tokens revoked and `ClientRevoked` (reason `expired`, actor system) in one
/// transaction. Runs with the cross-tenant role; replicas share the work via `SKIP LOCKED`. Expired
/// `Idempotency-Key`s and old rate-limit windows are the token service's janitor's to delete.
struct ClientExpiryService: Service {
    static let actor = EventActor.system("client-expiry")

    let systemDatabase: Database
    let outbox: OutboxWriter
    let interval: Duration
    /// Clients expired per run at most, so one run never holds long transactions or floods the outbox.
    var batchLimit = 500

    private var logger: Logger { systemDatabase.logger }

    func run() async throws {
        await runPeriodically(every: interval, name: "client expiry", logger: logger) {
            let expired = try await runOnce()
            if expired > 0 { logger.info("expired inactive clients", metadata: ["count": "\(expired)"]) }
        }
    }

    /// One run: expires up to `batchLimit` clients across tenants; returns how many it expired.
    @discardableResult
    func runOnce() async throws -> Int {
        let ttls = try await tenantTTLs().filter { $0.ttl > 0 }
        return ttls.isEmpty ? 0 : try await expire(ttls)
    }

    /// Each tenant's `inactive_client_ttl` in seconds; tenants whose policy no longer decodes are skipped.
    private func tenantTTLs() async throws -> [(tenant: String, ttl: Int)] {
        let rows = try await systemDatabase.client.query("SELECT tenant_id, policy::text FROM tenants", logger: logger)
        var result: [(tenant: String, ttl: Int)] = []
        for try await (id, json) in rows.decode((String, String).self) {
            guard let policy = try? LatchkeyJSON.makeDecoder().decode(TenantPolicy.self, from: Data(json.utf8)) else {
                logger.warning("skipping a tenant whose policy does not decode", metadata: ["tenant": "\(id)"])
                continue
            }
            result.append((id, policy.inactiveClientTTL))
        }
        return result
    }

    /// Locks the stalest candidates of every tenant (skipping rows another replica holds) and revokes
    /// them with their events, all in one transaction.
    private func expire(_ ttls: [(tenant: String, ttl: Int)]) async throws -> Int {
        let tenants = ttls.map(\.tenant)
        // Capped at 100 years: a larger TTL is "never" for all practical purposes and would overflow an interval.
        let seconds = ttls.map { Double(min($0.ttl, 3_153_600_000)) }
        let limit = batchLimit
        return try await systemDatabase.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT c.tenant_id, c.client_id, c.authenticated_user
                FROM clients c JOIN unnest(\(tenants)::text[], \(seconds)::float8[]) AS p (tenant_id, ttl)
                     ON p.tenant_id = c.tenant_id
                WHERE c.status = 'active' AND c.client_kind = 'dynamic'
                  AND COALESCE(c.last_used_at, c.created_at) < now() - make_interval(secs => p.ttl)
                ORDER BY COALESCE(c.last_used_at, c.created_at)
                LIMIT \(limit)
                FOR UPDATE OF c SKIP LOCKED
                """, logger: logger)
            var candidates: [(String, String, UUID?)] = []
            for try await row in rows.decode((String, String, UUID?).self) { candidates.append(row) }
            let now = Date()
            let reason = ClientRevoked.Reason.expired
            for (tenant, clientID, user) in candidates {
                guard let slug = TenantSlug(rawValue: tenant) else { continue }
                try await ClientRepository.revoke(
                    clientID, tenant: tenant, status: reason.resultingStatus, reason: reason.rawValue, at: now,
                    on: connection,
                    logger: logger)
                let event = ClientRevoked(
                    tenant: slug, clientID: clientID, reason: reason, authenticatedUser: user, actor: Self.actor,
                    revokedAt: now)
                try await outbox.append(
                    CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: logger)
                BusinessMetrics.revoked(event)
            }
            return candidates.count
        }
    }
}
