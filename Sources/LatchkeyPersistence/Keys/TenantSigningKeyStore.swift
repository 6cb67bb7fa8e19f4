import Foundation
import LatchkeyCore
import PostgresNIO
import Synchronization

/// Reads tenants' public token-signing keys from `signing_keys`, for verifying tokens they issued.
///
/// Queries run as the tenant-scoped role inside the key's tenant (Row-Level Security), so a
/// lookup can never return another tenant's key. Found keys are cached for `ttl`; misses are not,
/// so a key published after the first lookup is picked up by the next request.
public final class TenantSigningKeyStore: Sendable {
    /// A verification key and the algorithm its row declares.
    public struct PublicKey: Sendable, Equatable {
        public var kid: String
        public var algorithm: JWSAlgorithm
        public var jwk: JWK
    }

    private struct CacheKey: Hashable {
        var tenant: TenantSlug
        var kid: String?
    }

    private struct Entry {
        var key: PublicKey
        var publishUntil: Date?
        var expires: ContinuousClock.Instant
    }

    private let database: Database
    private let ttl: Duration
    private let cache = Mutex<[CacheKey: Entry]>([:])
    private let maximumEntries = 1_000

    /// `database` is the tenant-scoped (`latchkey_app`) pool.
    public init(database: Database, ttl: Duration = .seconds(60)) {
        self.database = database
        self.ttl = ttl
    }

    /// The key `kid` of `tenant` usable at `date` (the active key when `kid` is nil); nil when none.
    ///
    /// Keys with status `next` are published before they sign, so they never verify anything;
    /// retired keys verify until their `publish_until`.
    public func verificationKey(tenant: TenantSlug, kid: String?, at date: Date) async throws -> PublicKey? {
        let cacheKey = CacheKey(tenant: tenant, kid: kid)
        let now = ContinuousClock.now
        if let entry = cache.withLock({ $0[cacheKey] }), entry.expires > now {
            return entry.publishUntil.map { $0 > date } ?? true ? entry.key : nil
        }
        guard let (key, publishUntil) = try await load(tenant: tenant, kid: kid) else { return nil }
        cache.withLock { cache in
            if cache.count >= maximumEntries { cache.removeAll(keepingCapacity: true) }
            cache[cacheKey] = Entry(key: key, publishUntil: publishUntil, expires: now + ttl)
        }
        return publishUntil.map { $0 > date } ?? true ? key : nil
    }

    private func load(tenant: TenantSlug, kid: String?) async throws -> (PublicKey, Date?)? {
        let rows: [(String, String, String, String, Date?)] = try await database.withTenantTransaction(tenant.rawValue)
        {
            connection in
            let result: PostgresRowSequence
            if let kid {
                result = try await connection.query(
                    """
                    SELECT kid, algorithm, status, public_jwk::text, publish_until FROM signing_keys
                    WHERE tenant_id = \(tenant.rawValue) AND kid = \(kid)
                    """, logger: database.logger)
            } else {
                result = try await connection.query(
                    """
                    SELECT kid, algorithm, status, public_jwk::text, publish_until FROM signing_keys
                    WHERE tenant_id = \(tenant.rawValue) AND status = 'active'
                    """, logger: database.logger)
            }
            var rows: [(String, String, String, String, Date?)] = []
            for try await row in result.decode((String, String, String, String, Date?).self) { rows.append(row) }
            return rows
        }
        guard let (foundKid, algorithmName, status, jwkJSON, publishUntil) = rows.first, status != "next" else {
            return nil
        }
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            throw JOSEError.unsupportedAlgorithm("signing key \(foundKid) has unsupported algorithm \(algorithmName)")
        }
        let jwk: JWK
        do {
            jwk = try JSONDecoder().decode(JWK.self, from: Data(jwkJSON.utf8))
        } catch {
            throw JOSEError.invalidKey("signing key \(foundKid) has an unreadable public JWK")
        }
        // Active keys verify whatever publish_until says; only retired keys expire from use.
        return (PublicKey(kid: foundKid, algorithm: algorithm, jwk: jwk), status == "active" ? nil : publishUntil)
    }
}
