import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO
import Synchronization

/// A tenant as the HTTP layer needs it: identity, status and the policy in force.
public struct ResolvedTenant: Sendable, Equatable {
    public let slug: TenantSlug
    public let displayName: String
    public let status: String
    public let policy: TenantPolicy
    public let policyVersion: Int

    public init(slug: TenantSlug, displayName: String, status: String, policy: TenantPolicy, policyVersion: Int) {
        self.slug = slug
        self.displayName = displayName
        self.status = status
        self.policy = policy
        self.policyVersion = policyVersion
    }

    /// The string stored in every `tenant_id` column.
    public var id: String { slug.rawValue }
}

/// Looks tenants up in PostgreSQL and caches them briefly so `/t/{tenant}` costs no query per request.
public final class TenantDirectory: Sendable {
    private struct Entry {
        let tenant: ResolvedTenant?
        let expires: ContinuousClock.Instant
    }
    private let database: Database
    private let ttl: Duration
    private let cache = Mutex<[String: Entry]>([:])
    /// Bound on cached slugs, so a flood of random slugs cannot grow memory without limit.
    private let maximumEntries = 10_000

    public init(database: Database, ttl: Duration = .seconds(10)) {
        self.database = database
        self.ttl = ttl
    }

    /// The tenant with this slug, or nil when no such (active or suspended) tenant exists.
    public func tenant(_ slug: TenantSlug) async throws -> ResolvedTenant? {
        let now = ContinuousClock.now
        if let entry = cache.withLock({ $0[slug.rawValue] }), entry.expires > now {
            return entry.tenant
        }
        let tenant = try await load(slug)
        cache.withLock { cache in
            if cache.count >= maximumEntries { cache.removeAll(keepingCapacity: true) }
            cache[slug.rawValue] = Entry(tenant: tenant, expires: now + ttl)
        }
        return tenant
    }

    /// Drops a cached entry after the tenant or its policy changed in this process.
    public func invalidate(_ slug: TenantSlug) {
        _ = cache.withLock { $0.removeValue(forKey: slug.rawValue) }
    }

    private func load(_ slug: TenantSlug) async throws -> ResolvedTenant? {
        try await database.withTenantTransaction(slug.rawValue) { connection in
            let rows = try await connection.query(
                "SELECT display_name, status, policy::text, policy_version FROM tenants WHERE tenant_id = \(slug.rawValue)",
                logger: database.logger)
            for try await (name, status, policyJSON, version) in rows.decode((String, String, String, Int).self) {
                let policy = try LatchkeyJSON.makeDecoder().decode(TenantPolicy.self, from: Data(policyJSON.utf8))
                return ResolvedTenant(
                    slug: slug, displayName: name, status: status, policy: policy, policyVersion: version)
            }
            return nil
        }
    }
}

/// Resolves `{tenant}` of `/t/{tenant}/…` routes: 404 JSON for malformed, unknown or suspended tenants.
///
/// Admin routes admit suspended tenants: a suspended tenant is still administered, and its history is
/// exactly what a security team may need to read.
public struct TenantResolverMiddleware: RouterMiddleware {
    public typealias Context = LatchkeyRequestContext
    public let directory: TenantDirectory
    public let admitsSuspended: Bool

    public init(directory: TenantDirectory, admitsSuspended: Bool = false) {
        self.directory = directory
        self.admitsSuspended = admitsSuspended
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let raw = context.parameters.get("tenant"), let slug = TenantSlug(raw) else {
            throw OAuthError.notFound("unknown tenant")
        }
        guard let tenant = try await directory.tenant(slug), admitsSuspended || tenant.status == "active" else {
            throw OAuthError.notFound("unknown tenant")
        }
        var context = context
        context.tenant = tenant
        context.logger[metadataKey: "tenant"] = .string(tenant.id)
        return try await next(request, context)
    }
}
