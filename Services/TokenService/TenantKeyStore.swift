import HTTPTypes
import Logging
import PostgresNIO
import Shared

/// A tenant's signing keys for the token service: created on first use, published as JWKS, rotated on demand.
struct TenantKeyStore: Sendable {
    let keys: TenantSigningKeys
    let database: Database

    /// The active signer; generates an ES256 key when the tenant has none yet.
    func signingKey(tenant: String) async throws -> (kid: String, key: SigningKey) {
        let logger = database.logger
        if let active = try await database.withTenantTransaction(tenant, { try await keys.activeKey(tenant: tenant, on: $0, logger: logger) }) {
            return active
        }
        do {
            try await database.withTenantTransaction(tenant) { connection in
                try await keys.createKey(tenant: tenant, status: .active, on: connection, logger: logger)
            }
        } catch where error.isUniqueViolation {
            // Another request (or replica) created the first key at the same moment; use theirs.
        }
        guard let active = try await database.withTenantTransaction(tenant, { try await keys.activeKey(tenant: tenant, on: $0, logger: logger) })
        else { throw OAuthError(.internalServerError, "server_error", "no signing key") }
        return active
    }

    /// The tenant's JWKS (staged, active and still-published retired keys), creating the first key if needed.
    func jwks(tenant: String) async throws -> JWKSet {
        let logger = database.logger
        var published = try await database.withTenantTransaction(tenant) { try await keys.publishedKeys(tenant: tenant, on: $0, logger: logger) }
        if published.isEmpty {
            _ = try await signingKey(tenant: tenant)
            published = try await database.withTenantTransaction(tenant) { try await keys.publishedKeys(tenant: tenant, on: $0, logger: logger) }
        }
        return JWKSet(keys: published.map(\.jwk))
    }

    /// Rotation step 1: publish a new key (it signs nothing until ``activateStagedKey``).
    @discardableResult
    func stageKey(tenant: String, algorithm: JWSAlgorithm = .es256) async throws -> PublishedSigningKey {
        let logger = database.logger
        return try await database.withTenantTransaction(tenant) { connection in
            try await keys.stageNextKey(tenant: tenant, algorithm: algorithm, on: connection, logger: logger)
        }
    }

    /// Rotation step 2: the staged key signs; the old one stays published for the longest token lifetime.
    func activateStagedKey(tenant: String, policy: TenantPolicy) async throws -> Bool {
        let logger = database.logger
        let lifetimes = policy.tokenLifetimes
        let longest = max(lifetimes.accessToken, lifetimes.dcrAccessToken, lifetimes.idToken)
        return try await database.withTenantTransaction(tenant) { connection in
            try await keys.activateNextKey(tenant: tenant, retiredFor: .seconds(longest + 60), on: connection, logger: logger)
        }
    }
}
