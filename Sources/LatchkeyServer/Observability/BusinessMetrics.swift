import LatchkeyCore
import Metrics

/// Counters of what the platform does for its tenants, exported on `/metrics` next to the technical ones.
///
/// Every label value comes from a bounded set: grant types, OAuth error codes and revocation reasons are
/// fixed in code, and tenants are created by operators.
public enum BusinessMetrics {
    /// `latchkey_tokens_issued_total{tenant,grant_type}`: token responses sent by the token endpoint.
    public static func tokenIssued(tenant: String, grantType: String) {
        Counter(label: "latchkey_tokens_issued_total", dimensions: [("tenant", tenant), ("grant_type", grantType)])
            .increment()
    }

    /// `latchkey_registrations_total{tenant,outcome}`: dynamic client registration requests, `registered` or
    /// the OAuth error code they were refused with.
    public static func registration(tenant: String, outcome: String) {
        Counter(label: "latchkey_registrations_total", dimensions: [("tenant", tenant), ("outcome", outcome)])
            .increment()
    }

    /// `latchkey_sign_in_failures_total{tenant,reason}`: sign-ins that did not end in a session.
    public static func signInFailure(tenant: String, reason: SignInFailureReason) {
        Counter(
            label: "latchkey_sign_in_failures_total", dimensions: [("tenant", tenant), ("reason", reason.rawValue)]
        )
        .increment()
    }

    /// `latchkey_revocations_total{tenant,kind,reason}`: access tokens, refresh token families, clients and
    /// users revoked, counted with the event that announces each.
    public static func revoked(_ event: TokenRevoked) {
        revocation(
            tenant: event.tenant, kind: event.tokenType == .refresh ? .refreshTokenFamily : .accessToken,
            reason: event.reason.rawValue)
    }

    public static func revoked(_ event: ClientRevoked) {
        revocation(tenant: event.tenant, kind: .client, reason: event.reason.rawValue)
    }

    /// A user's reason is free text, so the label says only who disabled them: an administrator.
    public static func revoked(_ event: UserDisabled) {
        revocation(tenant: event.tenant, kind: .user, reason: "admin")
    }

    private static func revocation(tenant: TenantSlug, kind: RevocationKind, reason: String) {
        Counter(
            label: "latchkey_revocations_total",
            dimensions: [("tenant", tenant.rawValue), ("kind", kind.rawValue), ("reason", reason)]
        )
        .increment()
    }

    /// Why a sign-in failed.
    public enum SignInFailureReason: String, Sendable, CaseIterable {
        /// Wrong password, or no such user (the same answer to the user).
        case invalidCredentials = "invalid_credentials"
        /// Username or password missing or too long.
        case invalidRequest = "invalid_request"
        /// Refused by the per-source or per-account throttle.
        case throttled
        /// Every password-hashing slot was taken.
        case busy
        /// The upstream identity provider's answer could not be used.
        case upstreamFailed = "upstream_failed"
    }

    /// What was revoked.
    public enum RevocationKind: String, Sendable, CaseIterable {
        case accessToken = "access_token"
        case refreshTokenFamily = "refresh_token_family"
        case client
        case user
    }
}
