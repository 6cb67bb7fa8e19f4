import Foundation
import Logging
import PostgresNIO

/// Failed-sign-in throttling of the admin page per admin client and per source address (user password
/// sign-in has its own throttle in the token service, which never locks an account), with counters in PostgreSQL so every replica shares them. After `threshold` failures within `window`, the subject is locked out
/// for `baseLockout · 2^(lockouts so far)` (capped), answered with 429 and `Retry-After`.
public struct LoginThrottle: Sendable {
    /// What a counter is about.
    public enum Kind: String, Sendable {
        /// The account name as typed (lower-cased username or client id), whether or not it exists.
        case account
        /// The client address as ``ClientAddressResolver`` sees it (forwarded-for only from trusted proxies).
        case source
    }

    public var accountThreshold = 5
    /// Higher than the account one: many users may share one address (NAT, office).
    public var sourceThreshold = 20
    public var window: TimeInterval = 15 * 60
    public var baseLockout: TimeInterval = 60
    public var maximumLockout: TimeInterval = 3600

    /// Seconds until the longest current lockout among `subjects` ends, or nil when none is locked.
    public func retryAfter(
        _ subjects: [(Kind, String)], on connection: PostgresConnection, logger: Logger
    ) async throws -> Int? {
        var longest: Double?
        for (kind, subject) in subjects {
            let rows = try await connection.query(
                """
                SELECT extract(epoch FROM locked_until - now())::float8 FROM login_attempts
                WHERE kind = \(kind.rawValue) AND subject = \(subject) AND locked_until > now()
                """, logger: logger)
            for try await seconds in rows.decode(Double.self) { longest = max(longest ?? 0, seconds) }
        }
        return longest.map { max(1, Int($0.rounded(.up))) }
    }

    /// Counts a failure for each subject, locking those that reach their threshold.
    public func recordFailure(_ subjects: [(Kind, String)], on connection: PostgresConnection, logger: Logger)
        async throws
    {
        let windowSeconds = window
        for (kind, subject) in subjects {
            let rows = try await connection.query(
                """
                INSERT INTO login_attempts (tenant_id, kind, subject, failures)
                VALUES (latchkey_current_tenant(), \(kind.rawValue), \(subject), 1)
                ON CONFLICT (tenant_id, kind, subject) DO UPDATE SET
                    failures = CASE WHEN login_attempts.window_started_at < now() - make_interval(secs => \(windowSeconds))
                                    THEN 1 ELSE login_attempts.failures + 1 END,
                    window_started_at = CASE WHEN login_attempts.window_started_at < now() - make_interval(secs => \(windowSeconds))
                                    THEN now() ELSE login_attempts.window_started_at END,
                    lockouts = CASE WHEN login_attempts.last_failure_at < now() - interval '1 day'
                                    THEN 0 ELSE login_attempts.lockouts END,
                    last_failure_at = now()
                RETURNING failures, lockouts
                """, logger: logger)
            var state: (Int, Int)?
            for try await row in rows.decode((Int, Int).self) { state = row }
            guard let (failures, lockouts) = state, failures >= threshold(kind) else { continue }
            let lockout = min(maximumLockout, baseLockout * pow(2, Double(min(lockouts, 20))))
            try await connection.query(
                """
                UPDATE login_attempts SET locked_until = now() + make_interval(secs => \(lockout)),
                       lockouts = lockouts + 1, failures = 0, window_started_at = now()
                WHERE kind = \(kind.rawValue) AND subject = \(subject)
                """, logger: logger)
        }
    }

    /// A successful sign-in clears the account's counter (not the source's: one good password
    /// must not reset a spraying address).
    public func recordSuccess(account: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "DELETE FROM login_attempts WHERE kind = 'account' AND subject = \(account)", logger: logger)
    }

    public init() {}

    private func threshold(_ kind: Kind) -> Int { kind == .account ? accountThreshold : sourceThreshold }
}
