import LatchkeyCore

/// Which key signs for each tenant, so a grant needs no query to find it. Any change to a tenant's keys
/// (a first key, a rotation, a deletion) is notified by PostgreSQL when it commits (payload: the tenant id)
/// and drops the tenant's entry here. A key retired by a rotation stays published in the JWKS long after
/// the moment a replica hears of the rotation, so tokens it signs meanwhile still verify.
final class ActiveSigningKeys: Sendable {
    static let channel = "latchkey_signing_keys"

    struct Signer: Sendable {
        let kid: String
        let key: SigningKey
    }

    private let signers: NotifiedCache<String, Signer>

    init(ttl: Duration = .seconds(30), maximumEntries: Int = 10_000) {
        signers = NotifiedCache(ttl: ttl, maximumEntries: maximumEntries)
    }

    /// The current generation, to pass to ``store(_:tenant:readAt:)`` for a key read after this call.
    var generation: UInt64 { signers.generation }

    func signer(tenant: String) -> (kid: String, key: SigningKey)? {
        signers.value(for: tenant).map { ($0.kid, $0.key) }
    }

    func store(_ signer: (kid: String, key: SigningKey), tenant: String, readAt generation: UInt64) {
        signers.store(Signer(kid: signer.kid, key: signer.key), for: tenant, readAt: generation)
    }

    /// What keeps this cache in step with the `signing_keys` table.
    var subscription: ChangeNotificationListener.Subscription {
        ChangeNotificationListener.Subscription(
            channel: Self.channel, listening: { self.signers.setListening($0) },
            changed: { self.signers.invalidate($0) })
    }
}
