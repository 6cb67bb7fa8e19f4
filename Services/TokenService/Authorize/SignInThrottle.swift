import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Throttling of the password pages, kept in PostgreSQL so every replica shares it, with no
/// lockout of an account for everyone:
///
/// - `rate_limits.login`: sign-in and sign-up posts per client address and per tenant per minute;
///   sign-up also counts in buckets ``signUpDivisor`` times smaller (an account per post is costly).
/// - Progressive delay per (account, source): after ``freeFailures`` failures from one address, each
///   further failure doubles the wait for that address only, from ``baseDelay`` up to ``maximumDelay``.
/// - A ceiling per account for addresses it never signed in from: ``unknownSourceCeiling`` failures
///   per ``ceilingWindow``, then such addresses are refused for the rest of the window, while addresses
///   the user succeeded from keep working. This bounds guessing of short secrets (a 4-digit PIN has
///   10⁴ values) by any number of addresses; `rate_limits.login_per_user_per_minute` also applies to them.
struct SignInThrottle: Sendable {
    var freeFailures = 3
    var baseDelay: Double = 5
    var maximumDelay: Double = 15 * 60
    var unknownSourceCeiling = 20
    var ceilingWindow: Double = 24 * 3600
    /// Failures older than this no longer count towards an address's delay.
    var failureMemory: Double = 24 * 3600
    static let signUpDivisor = 6
    static let windowSeconds: Double = 60

    /// One fixed-window counter and its limit per minute (0 is off).
    struct Bucket: Sendable, Equatable {
        let key: String
        let limit: Int
    }

    static func signInBuckets(_ limits: RateLimits, source: String) -> [Bucket] {
        [
            Bucket(key: "source:\(source)", limit: limits.login.perSourcePerMinute),
            Bucket(key: "tenant", limit: limits.login.perTenantPerMinute),
        ].filter { $0.limit > 0 }
    }

    static func signUpBuckets(_ limits: RateLimits, source: String) -> [Bucket] {
        func smaller(_ limit: Int) -> Int { limit > 0 ? max(1, limit / signUpDivisor) : 0 }
        return
            ([
                Bucket(key: "signup-source:\(source)", limit: smaller(limits.login.perSourcePerMinute)),
                Bucket(key: "signup", limit: smaller(limits.login.perTenantPerMinute)),
            ].filter { $0.limit > 0 })
            + signInBuckets(limits, source: source)
    }

    /// Counts one post in each bucket, most specific first; seconds until the first exhausted bucket's
    /// window ends, or nil when allowed.
    func count(_ buckets: [Bucket], on connection: PostgresConnection, logger: Logger) async throws -> Int? {
        let window = Self.windowSeconds
        for bucket in buckets {
            let rows = try await connection.query(
                """
                INSERT INTO sign_in_rate_limits (tenant_id, limit_key, window_start, requests)
                VALUES (latchkey_current_tenant(), \(String(bucket.key.prefix(300))),
                        date_bin(make_interval(secs => \(window)), now(), timestamptz 'epoch'), 1)
                ON CONFLICT (tenant_id, limit_key, window_start)
                    DO UPDATE SET requests = sign_in_rate_limits.requests + 1
                RETURNING requests, extract(epoch FROM window_start + make_interval(secs => \(window)) - now())::float8
                """, logger: logger)
            var counted: (Int, Double)?
            for try await row in rows.decode((Int, Double).self) { counted = row }
            if let (requests, remaining) = counted, requests > bucket.limit { return Self.seconds(remaining) }
        }
        return nil
    }

    /// Whether `account` ever signed in from `source`, and how long that pair must still wait.
    func state(account: String, source: String, on connection: PostgresConnection, logger: Logger)
        async throws -> (known: Bool, retryAfter: Int?)
    {
        let rows = try await connection.query(
            """
            SELECT succeeded_at IS NOT NULL, extract(epoch FROM retry_at - now())::float8 FROM sign_in_sources
            WHERE account = \(account) AND source = \(source)
            """, logger: logger)
        var known = false
        var wait: Double?
        for try await (succeeded, remaining) in rows.decode((Bool, Double?).self) {
            known = succeeded
            wait = remaining
        }
        if let wait, wait > 0 { return (known, Self.seconds(wait)) }
        guard !known else { return (true, nil) }
        let ceiling = try await connection.query(
            """
            SELECT unknown_source_failures, extract(epoch FROM window_started_at + make_interval(secs => \(ceilingWindow)) - now())::float8
            FROM sign_in_accounts WHERE account = \(account)
            """, logger: logger)
        for try await (failures, remaining) in ceiling.decode((Int, Double).self)
        where failures >= unknownSourceCeiling && remaining > 0 {
            return (false, Self.seconds(remaining))
        }
        return (false, nil)
    }

    /// A wrong password (or unknown account) from `source`: that pair's delay grows, and a source the
    /// account never signed in from counts towards the account's ceiling.
    func recordFailure(account: String, source: String, known: Bool, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        let memory = failureMemory
        let rows = try await connection.query(
            """
            INSERT INTO sign_in_sources (tenant_id, account, source, failures, last_failure_at)
            VALUES (latchkey_current_tenant(), \(account), \(source), 1, now())
            ON CONFLICT (tenant_id, account, source) DO UPDATE SET
                failures = CASE WHEN sign_in_sources.last_failure_at < now() - make_interval(secs => \(memory))
                                THEN 1 ELSE sign_in_sources.failures + 1 END,
                last_failure_at = now()
            RETURNING failures
            """, logger: logger)
        var failures = 0
        for try await value in rows.decode(Int.self) { failures = value }
        if let delay = delay(afterFailures: failures) {
            try await connection.query(
                """
                UPDATE sign_in_sources SET retry_at = now() + make_interval(secs => \(delay))
                WHERE account = \(account) AND source = \(source)
                """, logger: logger)
        }
        guard !known else { return }
        let window = ceilingWindow
        try await connection.query(
            """
            INSERT INTO sign_in_accounts (tenant_id, account, unknown_source_failures, window_started_at)
            VALUES (latchkey_current_tenant(), \(account), 1, now())
            ON CONFLICT (tenant_id, account) DO UPDATE SET
                unknown_source_failures = CASE WHEN sign_in_accounts.window_started_at < now() - make_interval(secs => \(window))
                                THEN 1 ELSE sign_in_accounts.unknown_source_failures + 1 END,
                window_started_at = CASE WHEN sign_in_accounts.window_started_at < now() - make_interval(secs => \(window))
                                THEN now() ELSE sign_in_accounts.window_started_at END
            """, logger: logger)
    }

    /// The right password from `source`: its delay ends and it becomes a known source of the account.
    func recordSuccess(account: String, source: String, on connection: PostgresConnection, logger: Logger) async throws
    {
        try await connection.query(
            """
            INSERT INTO sign_in_sources (tenant_id, account, source, succeeded_at)
            VALUES (latchkey_current_tenant(), \(account), \(source), now())
            ON CONFLICT (tenant_id, account, source) DO UPDATE SET failures = 0, retry_at = NULL, succeeded_at = now()
            """, logger: logger)
    }

    /// Seconds to wait after the `failures`-th consecutive failure, nil while still free.
    func delay(afterFailures failures: Int) -> Double? {
        guard failures > freeFailures else { return nil }
        return min(maximumDelay, baseDelay * pow(2, Double(min(failures - freeFailures - 1, 30))))
    }

    private static func seconds(_ value: Double) -> Int { max(1, Int(value.rounded(.up))) }
}
