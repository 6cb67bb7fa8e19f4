import Synchronization

/// What a DPoP proof's protected header establishes once checked: the allow-listed algorithm, the
/// parsed public key and its RFC 7638 thumbprint. It depends on the header bytes alone.
struct DPoPProofHeader: Sendable {
    let algorithm: JWSAlgorithm
    let key: JWSPublicKey
    /// Public members only.
    let jwk: JWK
    let jkt: String
}

/// Checked proof headers by their exact base64url segment. A client sends the same header with
/// every proof (same `typ`, `alg` and `jwk`), so after its first proof the verifier skips the
/// header's base64url and JSON decoding, the key checks (on-curve point, RSA size) and the
/// thumbprint; the signature, claims and replay are still checked on every proof.
///
/// Only headers whose proof verified are remembered, so a flood of unsigned headers cannot evict
/// real clients. Bound: `maxEntries` headers of at most the proof size each; when full, an
/// arbitrary sixteenth is dropped (amortised O(1)).
final class DPoPProofHeaderCache: Sendable {
    let maxEntries: Int
    private let entries = Mutex<[String: DPoPProofHeader]>([:])

    init(maxEntries: Int) {
        precondition(maxEntries > 0, "maxEntries must be positive")
        self.maxEntries = maxEntries
    }

    var count: Int { entries.withLock { $0.count } }

    func header(for segment: String) -> DPoPProofHeader? {
        entries.withLock { $0[segment] }
    }

    func remember(_ header: DPoPProofHeader, for segment: String) {
        entries.withLock { entries in
            if entries.count >= maxEntries, entries[segment] == nil {
                for victim in Array(entries.keys.prefix(max(1, maxEntries / 16))) { entries[victim] = nil }
            }
            entries[segment] = header
        }
    }
}
