import Foundation
import LatchkeyCore

/// How long the sidecar remembers a revocation: until every token it ended would be refused anyway, by its
/// `exp` or by its lifetime.
struct RevocationRetention: Sendable {
    /// Longest access-token lifetime (`exp` − `iat`) the sidecar accepts.
    var maxTokenLifetimeSeconds: Int64 = 86_400
    /// The tolerance the sidecar's expiry check gives `exp`.
    var clockSkewSeconds: Int64 = 10

    /// Unix seconds until which a revocation made at `revokedAt` must be remembered. The tokens it ended were signed
    /// before `revokedAt`, or racing it a little after, and live no longer than the sidecar accepts; the event may
    /// say they expire sooner (`tokensExpireAt`). The skew of the expiry check comes on top.
    func keepUntil(revokedAt: Date, tokensExpireAt: Date?) -> Int64 {
        var until = Self.seconds(revokedAt) + maxTokenLifetimeSeconds + ClientRevoked.issuanceSlackSeconds
        if let tokensExpireAt { until = min(until, Self.seconds(tokensExpireAt)) }
        return until + clockSkewSeconds
    }

    /// Whole Unix seconds, rounded up (event times are RFC 3339 timestamps, far from overflowing).
    static func seconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.up))
    }
}
