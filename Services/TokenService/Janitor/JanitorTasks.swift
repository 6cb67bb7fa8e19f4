/// What the janitor deletes: one table and the condition under which a row has no use any more. Conditions
/// are fixed SQL; rows stay an hour past their expiry so that a late request still gets the precise
/// answer (a replayed code still revokes what it issued, a revoked session still reads as revoked).
struct JanitorTask: Sendable, Equatable {
    let table: String
    let condition: String

    static let all: [JanitorTask] = [
        JanitorTask(table: "authorization_codes", condition: "expires_at < now() - interval '1 hour'"),
        JanitorTask(table: "issued_access_tokens", condition: "expires_at < now() - interval '1 hour'"),
        // A family's rows share its absolute expiry; past it, reuse detection has nothing left to protect.
        JanitorTask(table: "refresh_tokens", condition: "expires_at < now() - interval '1 hour'"),
        JanitorTask(
            table: "sso_sessions",
            condition: "expires_at < now() - interval '1 hour' OR revoked_at < now() - interval '1 hour'"),
        JanitorTask(
            table: "admin_sessions",
            condition: "expires_at < now() - interval '1 hour' OR ended_at < now() - interval '1 hour'"),
        JanitorTask(
            table: "login_attempts",
            condition: "last_failure_at < now() - interval '1 day' AND (locked_until IS NULL OR locked_until < now())"),
        // Failures are forgotten after a day; an address the user signed in from stays known for 90 days.
        JanitorTask(
            table: "sign_in_sources",
            condition: """
                (succeeded_at IS NULL OR succeeded_at < now() - interval '90 days')
                AND (last_failure_at IS NULL OR last_failure_at < now() - interval '1 day')
                AND (retry_at IS NULL OR retry_at < now())
                """),
        JanitorTask(table: "sign_in_accounts", condition: "window_started_at < now() - interval '1 day'"),
        JanitorTask(table: "consents", condition: "expires_at < now() - interval '1 hour'"),
        // One-minute windows; a few are kept for debugging.
        JanitorTask(table: "sign_in_rate_limits", condition: "window_start < now() - interval '10 minutes'"),
        JanitorTask(table: "registration_rate_limits", condition: "window_start < now() - interval '10 minutes'"),
        // A registration's Idempotency-Key answers retries until it expires (24 h), and not after.
        JanitorTask(table: "registration_idempotency_keys", condition: "expires_at <= now()"),
    ]
}
