import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Zero-downtime rotation of a tenant's token-signing key, shared by the admin API, the CLI and the
/// token service's lifecycle job: **stage** (published in the JWKS, signs nothing) → **activate**
/// (signs; the old key retires) once published for at least the JWKS cache lifetime → **delete** the
/// retired key once every token it signed has expired. Every step runs in the tenant's transaction
/// under the tenant's row lock and a per-tenant advisory lock, so replicas and concurrent operators
/// never create two staged keys or activate twice.
public struct SigningKeyRotation: Sendable {
    /// Seconds added to the longest token lifetime before a retired key leaves the JWKS: clock skew
    /// and requests that picked up the old signer just before activation.
    public static let retirementMarginSeconds = 60

    public let keys: TenantSigningKeys
    /// The tenant-scoped (`latchkey_app`) pool.
    public let database: Database

    public init(keys: TenantSigningKeys, database: Database) {
        self.keys = keys
        self.database = database
    }

    /// How long a retired key stays published: the longest lifetime of anything it signed (access,
    /// DCR and ID tokens of the tenant's `token_lifetimes`) plus the margin.
    public static func retirementPeriod(for policy: TenantPolicy) -> Duration {
        let lifetimes = policy.tokenLifetimes
        return .seconds(
            max(lifetimes.accessToken, lifetimes.dcrAccessToken, lifetimes.idToken) + retirementMarginSeconds)
    }

    /// A staged key and, when the rotation switched algorithms, the policy version that records it.
    public struct Rotation: Sendable {
        public var key: SigningKeyRecord
        public var policyVersion: Int?
    }

    /// Stages the tenant's next key, of `algorithm` or else the policy's `signing_algorithm`. An
    /// algorithm other than the policy's becomes the policy's (a new version recorded with `actor`),
    /// so the lifecycle job does not switch it back.
    public func rotate(tenant: String, algorithm: JWSAlgorithm?, actor: String) async throws -> Rotation {
        try await database.withTenantTransaction(tenant) { connection in
            let policies = TenantPolicyRecords(logger: database.logger)
            guard let (current, _) = try await policies.lockedPolicy(tenant, on: connection) else {
                throw SigningKeyRotationError.unknownTenant
            }
            var policy = current
            let chosen = algorithm ?? policy.signingAlgorithm
            guard TenantPolicy.signingAlgorithms.contains(chosen) else {
                throw SigningKeyRotationError.unsupportedAlgorithm(chosen.rawValue)
            }
            let staged = try await keys.stageNextKey(
                tenant: tenant, algorithm: chosen, stagedBy: actor, on: connection, logger: database.logger)
            var version: Int?
            if chosen != policy.signingAlgorithm {
                policy.signingAlgorithm = chosen
                version = try await policies.updatePolicy(tenant, policy: policy, actor: actor, on: connection)
            }
            let record = try await keys.listKeys(tenant: tenant, on: connection, logger: database.logger)
                .first { $0.kid == staged.kid }
            guard let record else { throw SigningKeyRotationError.unknownTenant }
            return Rotation(key: record, policyVersion: version)
        }
    }

    /// Every stored key of the tenant (public facts only).
    public func list(tenant: String) async throws -> [SigningKeyRecord] {
        try await database.withTenantTransaction(tenant) { connection in
            try await keys.listKeys(tenant: tenant, on: connection, logger: database.logger)
        }
    }

    /// What one lifecycle pass did for a tenant.
    public struct Progress: Sendable, Equatable {
        public var activated: String?
        public var staged: String?
        public var deleted: [String] = []

        public var isEmpty: Bool { activated == nil && staged == nil && deleted.isEmpty }
    }

    /// One lifecycle pass for `tenant`: deletes retired keys past their publication, activates a key
    /// staged at least `publishDelay` ago, and stages a key of the policy's algorithm when the signer
    /// uses another one and nothing is staged (a policy change). Idempotent; safe to run on every replica.
    public func advance(tenant: String, publishDelay: Duration) async throws -> Progress {
        try await database.withTenantTransaction(tenant) { connection in
            var progress = Progress()
            let logger = database.logger
            guard
                let (policy, version) = try await TenantPolicyRecords(logger: logger).lockedPolicy(
                    tenant, on: connection)
            else { return progress }
            try await keys.lockKeys(tenant: tenant, on: connection, logger: logger)
            progress.deleted = try await keys.deleteExpiredKeys(tenant: tenant, on: connection, logger: logger)
            progress.activated = try await keys.activateNextKey(
                tenant: tenant, retiredFor: Self.retirementPeriod(for: policy), publishedFor: publishDelay,
                on: connection, logger: logger)
            guard progress.activated == nil else { return progress }
            let stored = try await keys.listKeys(tenant: tenant, on: connection, logger: logger)
            if !stored.contains(where: { $0.status == .next }),
                let active = stored.first(where: { $0.status == .active }),
                active.algorithm != policy.signingAlgorithm.rawValue
            {
                progress.staged = try await keys.stageNextKey(
                    tenant: tenant, algorithm: policy.signingAlgorithm, stagedBy: "policy v\(version)",
                    on: connection, logger: logger
                ).kid
            }
            return progress
        }
    }

    /// Active tenants with lifecycle work due (read with the cross-tenant `latchkey_system` pool, which
    /// sees the keys' public columns only): a staged key old enough to activate, a retired key past its
    /// publication, or a signer whose algorithm differs from the policy's with nothing staged.
    public static func tenantsWithDueWork(
        publishDelay: Duration, limit: Int, systemDatabase: Database
    ) async throws -> [String] {
        let delay = Double(publishDelay.components.seconds)
        let rows = try await systemDatabase.client.query(
            """
            SELECT t.tenant_id FROM tenants t
            WHERE t.status = 'active' AND (
                EXISTS (SELECT 1 FROM signing_keys k WHERE k.tenant_id = t.tenant_id AND (
                    (k.status = 'next' AND k.created_at <= now() - make_interval(secs => \(delay)))
                    OR (k.status = 'retired' AND k.publish_until <= now())))
                OR (EXISTS (SELECT 1 FROM signing_keys k WHERE k.tenant_id = t.tenant_id AND k.status = 'active'
                            AND k.algorithm <> COALESCE(t.policy->>'signing_algorithm', 'ES256'))
                    AND NOT EXISTS (SELECT 1 FROM signing_keys k WHERE k.tenant_id = t.tenant_id AND k.status = 'next')))
            ORDER BY t.tenant_id LIMIT \(limit)
            """, logger: systemDatabase.logger)
        var tenants: [String] = []
        for try await tenant in rows.decode(String.self) { tenants.append(tenant) }
        return tenants
    }
}
