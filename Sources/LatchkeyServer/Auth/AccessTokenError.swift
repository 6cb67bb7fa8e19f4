/// Why an access token was refused. `description` is safe to log and to send in
/// `error_description` (never the token or key material); `reason` is a short, bounded label for metrics.
public enum AccessTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a well-formed JWT access token (structure, size, `typ`, `alg`, claim types).
    case malformed(String)
    /// `iss` is not one of the accepted issuers.
    case untrustedIssuer
    /// No key of the issuer's JWKS verifies the signature (unknown `kid` or bad signature).
    case invalidSignature(String)
    /// `exp` has passed (beyond the allowed skew).
    case expired
    /// `nbf` is still in the future (beyond the allowed skew).
    case notYetValid
    /// `aud` names none of the accepted audiences.
    case wrongAudience
    /// `exp` − `iat` is longer than the verifier accepts.
    case lifetimeTooLong
    /// The issuer's keys could not be fetched and none are cached: a server-side outage, not the client's fault.
    case keysUnavailable

    public var description: String {
        switch self {
        case .malformed(let detail): return "access token is malformed: \(detail)"
        case .untrustedIssuer: return "access token issuer is not accepted"
        case .invalidSignature(let detail): return "access token signature is invalid: \(detail)"
        case .expired: return "access token has expired"
        case .notYetValid: return "access token is not yet valid"
        case .wrongAudience: return "access token audience is not accepted"
        case .lifetimeTooLong: return "access token lifetime is longer than accepted here"
        case .keysUnavailable: return "the issuer's signing keys are unavailable"
        }
    }

    /// Metric label.
    public var reason: String {
        switch self {
        case .malformed: return "token_malformed"
        case .untrustedIssuer: return "token_untrusted_issuer"
        case .invalidSignature: return "token_invalid_signature"
        case .expired: return "token_expired"
        case .notYetValid: return "token_not_yet_valid"
        case .wrongAudience: return "token_wrong_audience"
        case .lifetimeTooLong: return "token_lifetime_too_long"
        case .keysUnavailable: return "token_keys_unavailable"
        }
    }
}
