import HTTPTypes
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO
import Synchronization

/// A tenant's signing keys for the token service: the first one created on first use (of the policy's
/// algorithm), published as JWKS; rotation is ``SigningKeyRotation``'s.
struct TenantKeyStore: Sendable {
    let keys: TenantSigningKeys
    let database: Database
    /// Which key signs for each tenant, while PostgreSQL's notifications of key changes are heard.
    var activeSigners = ActiveSigningKeys()
    /// Keys already decrypted, by tenant and kid: the active key is read again after every change to a
    /// tenant's keys (on any replica), but opened only the first time.
    let unsealed = UnsealedSigningKeys()

    /// The active signer; generates a key of `algorithm` when the tenant has none yet.
    func signingKey(tenant: String, algorithm: JWSAlgorithm = .es256) async throws -> (kid: String, key: SigningKey) {
        if let signer = activeSigners.signer(tenant: tenant) { return signer }
        let logger = database.logger
        let generation = activeSigners.generation
        if let active = try await keys.activeKey(
            tenant: tenant, database: database, unsealed: { unsealed.key(tenant: tenant, kid: $0) })
        {
            unsealed.remember(active.key, tenant: tenant, kid: active.kid)
            activeSigners.store(active, tenant: tenant, readAt: generation)
            return active
        }
        do {
            try await database.withTenantTransaction(tenant) { connection in
                try await keys.createKey(
                    tenant: tenant, algorithm: algorithm, status: .active, on: connection, logger: logger)
            }
        } catch  where error.isUniqueViolation {
            // Another request (or replica) created the first key at the same moment; use theirs.
        }
        guard
            let active = try await database.withTenantTransaction(
                tenant, { try await keys.activeKey(tenant: tenant, on: $0, logger: logger) })
        else { throw OAuthError(.internalServerError, "server_error", "no signing key") }
        return active
    }

    /// The signer of `tenant`, created with the policy's algorithm if it has none yet.
    func signingKey(for tenant: ResolvedTenant) async throws -> (kid: String, key: SigningKey) {
        try await signingKey(tenant: tenant.id, algorithm: tenant.policy.signingAlgorithm)
    }

    /// The tenant's published keys: staged, active and still-published retired ones (none created).
    func publishedKeys(tenant: String) async throws -> [PublishedSigningKey] {
        let logger = database.logger
        return try await database.withTenantTransaction(tenant) {
            try await keys.publishedKeys(tenant: tenant, on: $0, logger: logger)
        }
    }

    /// The tenant's published keys, creating the first key if needed.
    func publishedKeys(for tenant: ResolvedTenant) async throws -> [PublishedSigningKey] {
        let published = try await publishedKeys(tenant: tenant.id)
        guard published.isEmpty else { return published }
        _ = try await signingKey(for: tenant)
        return try await publishedKeys(tenant: tenant.id)
    }

    /// The tenant's JWKS.
    func jwks(for tenant: ResolvedTenant) async throws -> JWKSet {
        JWKSet(keys: try await publishedKeys(for: tenant).map(\.jwk))
    }
}

/// Opened signing keys by tenant and kid (a handful per tenant: active, staged, retired).
final class UnsealedSigningKeys: Sendable {
    private let keys = Mutex<[String: SigningKey]>([:])
    /// Bound, so tenants coming and going cannot grow it without limit.
    private let maximumEntries = 10_000

    func key(tenant: String, kid: String) -> SigningKey? {
        keys.withLock { $0[tenant + " " + kid] }
    }

    func remember(_ key: SigningKey, tenant: String, kid: String) {
        keys.withLock { keys in
            if keys.count >= maximumEntries { keys.removeAll(keepingCapacity: true) }
            keys[tenant + " " + kid] = key
        }
    }
}
