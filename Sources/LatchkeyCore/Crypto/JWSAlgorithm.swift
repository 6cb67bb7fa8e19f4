/// The asymmetric JWS algorithms Latchkey implements (RFC 7518 §3, RFC 8037 for EdDSA).
///
/// Parsing is exact and case-sensitive: `none`, `None`, `HS256` or `es256` have no case here,
/// so they can never be selected by an attacker-controlled header.
public enum JWSAlgorithm: String, Sendable, CaseIterable, Codable {
    case es256 = "ES256"
    case es384 = "ES384"
    case rs256 = "RS256"
    case ps256 = "PS256"
    case edDSA = "EdDSA"

    /// Case-sensitive parse; `nil` for anything not implemented.
    public init?(parsing value: String) {
        self.init(rawValue: value)
    }

    /// Raw signature length for ECDSA (R||S) and EdDSA; RSA depends on the modulus.
    public var fixedSignatureLength: Int? {
        switch self {
        case .es256: return 64
        case .es384: return 96
        case .edDSA: return 64
        case .rs256, .ps256: return nil
        }
    }

    /// The JWK `kty`/`crv` this algorithm requires.
    public var requiredKeyType: (kty: String, crv: String?) {
        switch self {
        case .es256: return ("EC", "P-256")
        case .es384: return ("EC", "P-384")
        case .rs256, .ps256: return ("RSA", nil)
        case .edDSA: return ("OKP", "Ed25519")
        }
    }

    /// True when `jwk` is of the type this algorithm signs with (ES256 ⇔ EC P-256, ES384 ⇔ EC P-384,
    /// RS256/PS256 ⇔ RSA, EdDSA ⇔ OKP Ed25519), its `alg` (if any) names this algorithm and its
    /// `use` (if any) is "sig".
    public func matches(_ jwk: JWK) -> Bool {
        (try? validate(jwk)) != nil
    }

    /// Throws `keyAlgorithmMismatch` explaining why `jwk` cannot be used with this algorithm.
    ///
    /// - Parameter requireDeclaredAlgorithm: the JWK must carry `alg` (naming this algorithm). Set it for
    ///   keys we publish ourselves, which always declare one, so a key can only ever verify one algorithm.
    public func validate(_ jwk: JWK, requireDeclaredAlgorithm: Bool = false) throws(JOSEError) {
        if requireDeclaredAlgorithm, jwk.alg == nil {
            throw .keyAlgorithmMismatch("jwk declares no alg; \(rawValue) needs a key declared for it")
        }
        let required = requiredKeyType
        guard jwk.kty == required.kty else {
            throw .keyAlgorithmMismatch("\(rawValue) requires kty \(required.kty), got \(jwk.kty)")
        }
        if let crv = required.crv, jwk.crv != crv {
            throw .keyAlgorithmMismatch("\(rawValue) requires crv \(crv), got \(jwk.crv ?? "none")")
        }
        if let declared = jwk.alg, declared != rawValue {
            throw .keyAlgorithmMismatch("jwk declares alg \(declared), JWS uses \(rawValue)")
        }
        if let use = jwk.use, use != "sig" {
            throw .keyAlgorithmMismatch("jwk use is \(use), not sig")
        }
    }
}

extension JWSPublicKey {
    /// True when this key type can verify signatures made with `algorithm`.
    public func supports(_ algorithm: JWSAlgorithm) -> Bool {
        switch (self, algorithm) {
        case (.p256, .es256), (.p384, .es384), (.rsa, .rs256), (.rsa, .ps256), (.ed25519, .edDSA):
            return true
        default:
            return false
        }
    }
}
