import HTTPTypes
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Per-tenant and per-source limits of `POST /t/{tenant}/register` (policy `rate_limits.registration`),
/// counted in fixed one-minute windows in PostgreSQL so every replica shares them; over → 429 + `Retry-After`.
///
/// Requests without a bearer token (open registration) are limited harder: they also count in
/// `open` buckets whose limits are the policy's divided by ``openDivisor`` (at least 1).
struct RegistrationRateLimiter: Sendable {
    static let openDivisor = 4
    static let windowSeconds: Double = 60

    let database: Database

    /// One counter and its limit per window.
    struct Bucket: Sendable, Equatable {
        let key: String
        let limit: Int
    }

    /// The counters a request counts in, most specific first: a source refused at its own limit stops
    /// there and does not use up the budget of the whole tenant. Limits of 0 are off.
    static func buckets(for limit: RateLimit, source: String, open: Bool) -> [Bucket] {
        var buckets: [Bucket] = []
        if open { buckets.append(Bucket(key: "open-source:\(source)", limit: harder(limit.perSourcePerMinute))) }
        buckets.append(Bucket(key: "source:\(source)", limit: limit.perSourcePerMinute))
        if open { buckets.append(Bucket(key: "open", limit: harder(limit.perTenantPerMinute))) }
        buckets.append(Bucket(key: "tenant", limit: limit.perTenantPerMinute))
        return buckets.filter { $0.limit > 0 }
    }

    private static func harder(_ limit: Int) -> Int { limit > 0 ? max(1, limit / openDivisor) : 0 }

    /// Counts one request; seconds until the window of the first exhausted bucket ends, or nil when allowed.
    /// One statement, a transaction of its own: the counters every registration of the tenant updates are
    /// locked only for that statement and its commit.
    func retryAfter(tenant: String, source: String, open: Bool, limit: RateLimit) async throws -> Int? {
        let buckets = Self.buckets(for: limit, source: source, open: open)
        guard !buckets.isEmpty else { return nil }
        let remaining = try await database.withStatementTransaction(tenant: tenant) {
            let rows = try await database.client.query(
                """
                SELECT retry_after FROM count_registration_request(\(tenant), \(buckets.map(\.key)),
                    \(buckets.map(\.limit))::int[], \(Self.windowSeconds))
                """, logger: database.logger)
            var remaining: Double?
            for try await value in rows.decode(Double?.self) { remaining = value }
            return remaining
        }
        return remaining.map(Self.retryAfterSeconds)
    }

    /// Throws 429 `too_many_requests` with `Retry-After` when the request is over a limit.
    func enforce(tenant: ResolvedTenant, source: String, open: Bool) async throws {
        guard
            let seconds = try await retryAfter(
                tenant: tenant.id, source: source, open: open, limit: tenant.policy.rateLimits.registration)
        else { return }
        throw Self.refusal(retryAfter: seconds)
    }

    /// Whole seconds (at least 1) for `Retry-After` when the window ends `remaining` seconds from now.
    static func retryAfterSeconds(_ remaining: Double) -> Int { max(1, Int(remaining.rounded(.up))) }

    /// 429 `too_many_requests` with `Retry-After`.
    static func refusal(retryAfter seconds: Int) -> OAuthError {
        OAuthError(
            .tooManyRequests, "too_many_requests",
            "too many registration requests; retry after \(seconds) seconds", headers: [.retryAfter: String(seconds)])
    }
}
