import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Issues a client a new secret while the old one keeps working for the tenant's `client_secret_overlap`
/// (never beyond its own expiry), so an instance that has not stored its new secret yet is not locked out.
enum ClientSecretRotation {
    struct Rotated: Sendable {
        /// The new secret, shown once.
        var secret: String
        var expiresAt: Date?
        /// Until when the replaced secret still authenticates; nil when it stopped at once.
        var previousValidUntil: Date?
    }

    /// Whether an RFC 7592 PUT should issue a new secret: the client has one that expires within the
    /// policy's `client_secret_rotation_window`.
    static func isDue(_ client: StoredClient, policy: TenantPolicy, at now: Date) -> Bool {
        guard client.clientSecretHash != nil, let expiry = client.record.secretExpiresAt else { return false }
        return expiry.timeIntervalSince(now) <= TimeInterval(policy.clientSecretRotationWindow)
    }

    /// Rotates the secret of `client` (locked by the caller's transaction); the record gets the new expiry.
    static func rotate(
        _ client: inout StoredClient, policy: TenantPolicy, hasher: KeyedHasher, at now: Date,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Rotated {
        let secret = SecretTokens.generate(prefix: "lk_cs_")
        let lifetime = policy.clientSecretLifetime
        let expiresAt = lifetime > 0 ? now.addingTimeInterval(TimeInterval(lifetime)) : nil
        var previousUntil: Date?
        if client.clientSecretHash != nil, policy.clientSecretOverlap > 0 {
            let overlapEnd = now.addingTimeInterval(TimeInterval(policy.clientSecretOverlap))
            let end = client.record.secretExpiresAt.map { min($0, overlapEnd) } ?? overlapEnd
            previousUntil = end > now ? end : nil
        }
        try await ClientRepository.rotateSecret(
            client.record.clientID, tenant: client.record.tenant.rawValue, secretHash: hasher.hash(secret),
            secretExpiresAt: expiresAt, previousUntil: previousUntil, at: now, on: connection, logger: logger)
        client.previousSecretHash = previousUntil == nil ? nil : client.clientSecretHash
        client.previousSecretExpiresAt = previousUntil
        client.clientSecretHash = hasher.hash(secret)
        client.record.secretExpiresAt = expiresAt
        client.record.updatedAt = now
        return Rotated(secret: secret, expiresAt: expiresAt, previousValidUntil: previousUntil)
    }
}
