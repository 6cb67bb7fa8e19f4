import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Synchronization

/// The published signing keys of each tenant, read from Postgres and cached; a `kid` that is not
/// in the cached set triggers one reload (a key the token service just staged or activated).
final class TenantKeyCache: Sendable {
    private struct Entry {
        let keys: JWKSet
        let loadedAt: ContinuousClock.Instant
    }

    private let database: Database
    private let ttl: Duration
    /// A kid miss reloads at most this often per tenant, so random kids cannot hammer Postgres.
    private let missRefreshInterval: Duration
    private let entries = Mutex<[String: Entry]>([:])
    private let maximumEntries = 10_000
    // The gateway reads public halves only; the envelope is never used to open a private key.
    private let keys: TenantSigningKeys

    init(database: Database, ttl: Duration, missRefreshInterval: Duration = .seconds(1)) throws {
        self.database = database
        self.ttl = ttl
        self.missRefreshInterval = missRefreshInterval
        self.keys = TenantSigningKeys(envelope: try KeyEnvelope(configuration: KeyMaterial.generateConfigurationValue()))
    }

    /// Keys of `tenant` suitable for a token whose header names `kid`.
    func keys(tenant: String, kid: String?) async throws -> JWKSet {
        let now = ContinuousClock.now
        if let entry = entries.withLock({ $0[tenant] }) {
            let fresh = now - entry.loadedAt < ttl
            let knowsKid = kid.map { entry.keys.key(withID: $0) != nil } ?? true
            if fresh && (knowsKid || now - entry.loadedAt < missRefreshInterval) { return entry.keys }
        }
        return try await reload(tenant: tenant)
    }

    private func reload(tenant: String) async throws -> JWKSet {
        let published = try await database.withTenantTransaction(tenant) { connection in
            try await keys.publishedKeys(tenant: tenant, on: connection, logger: database.logger)
        }
        let set = JWKSet(keys: published.map(\.jwk))
        entries.withLock { entries in
            if entries.count >= maximumEntries { entries.removeAll(keepingCapacity: true) }
            entries[tenant] = Entry(keys: set, loadedAt: .now)
        }
        return set
    }
}
