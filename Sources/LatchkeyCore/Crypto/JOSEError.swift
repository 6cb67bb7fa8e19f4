/// Why a JOSE object (JWS, JWK) was refused; the reason is safe to log (never contains key material).
public enum JOSEError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Structure or encoding is wrong (segments, base64url, JSON shape, member types).
    case malformed(String)
    /// The `alg` value is not one this library implements (case-sensitive; `none` and `HS*` never are).
    case unsupportedAlgorithm(String)
    /// The algorithm is implemented but not in the caller's allow-list.
    case algorithmNotAllowed(String)
    /// The key cannot be used: unsupported type or curve, wrong sizes, off-curve point, weak RSA.
    case invalidKey(String)
    /// The key does not belong to the algorithm (e.g. ES256 with a P-384 or RSA key).
    case keyAlgorithmMismatch(String)
    /// A `crit` header names an extension this recipient does not understand (RFC 7515 §4.1.11).
    case unsupportedCriticalHeader(String)
    /// The signature does not verify.
    case invalidSignature(String)

    public var reason: String {
        switch self {
        case .malformed(let reason), .unsupportedAlgorithm(let reason), .algorithmNotAllowed(let reason),
            .invalidKey(let reason), .keyAlgorithmMismatch(let reason), .unsupportedCriticalHeader(let reason),
            .invalidSignature(let reason):
            return reason
        }
    }

    public var description: String { reason }
}
