/// A refused DPoP proof. `useNonce` asks the client to retry with the server's current nonce
/// (answer 401/400 `use_dpop_nonce` with a `DPoP-Nonce` header); everything else is
/// `invalid_dpop_proof`. Reasons are safe to log: they never contain tokens or key material.
public enum DPoPError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidProof(String)
    case useNonce(String)

    /// The OAuth error code for the response (RFC 9449 §§ 5, 7.1, 8).
    public var errorCode: String {
        switch self {
        case .invalidProof: return "invalid_dpop_proof"
        case .useNonce: return "use_dpop_nonce"
        }
    }

    /// True when the response must carry a fresh `DPoP-Nonce` header.
    public var requiresNonce: Bool {
        if case .useNonce = self { return true }
        return false
    }

    public var reason: String {
        switch self {
        case .invalidProof(let reason), .useNonce(let reason): return reason
        }
    }

    public var description: String { "\(errorCode): \(reason)" }
}
