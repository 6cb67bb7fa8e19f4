import Crypto
import Foundation
import _CryptoExtras

/// A validated public verification key built from a JWK (or a `SigningKey`).
///
/// Construction performs the checks that must never be skipped: exact coordinate sizes,
/// point-on-curve (swift-crypto rejects off-curve points), minimal-octet RSA integers and
/// a 2048…8192-bit RSA modulus (the upper bound caps verification cost for untrusted keys).
public enum JWSPublicKey: Sendable {
    case p256(P256.Signing.PublicKey)
    case p384(P384.Signing.PublicKey)
    case rsa(_RSA.Signing.PublicKey)
    case ed25519(Curve25519.Signing.PublicKey)

    /// Smallest RSA modulus accepted, in bits.
    public static let minimumRSABits = 2048
    /// Largest RSA modulus accepted, in bits (bounds CPU spent on attacker-supplied keys).
    public static let maximumRSABits = 8192

    /// Builds the key from a public JWK; refuses JWKs carrying private members.
    public init(jwk: JWK) throws(JOSEError) {
        guard !jwk.hasPrivateMembers else {
            throw .invalidKey("jwk contains private members: \(jwk.privateMemberNames.joined(separator: ","))")
        }
        switch jwk.kty {
        case "EC":
            switch jwk.crv {
            case "P-256":
                let raw = try Self.coordinates(jwk, length: 32)
                do { self = .p256(try P256.Signing.PublicKey(rawRepresentation: raw)) } catch {
                    throw .invalidKey("P-256 point is not on the curve")
                }
            case "P-384":
                let raw = try Self.coordinates(jwk, length: 48)
                do { self = .p384(try P384.Signing.PublicKey(rawRepresentation: raw)) } catch {
                    throw .invalidKey("P-384 point is not on the curve")
                }
            default:
                throw .invalidKey("unsupported EC curve \(jwk.crv ?? "none")")
            }
        case "RSA":
            guard let nString = jwk.n, let eString = jwk.e,
                let modulus = Base64URL.decode(nString), let exponent = Base64URL.decode(eString)
            else {
                throw .invalidKey("RSA jwk needs base64url n and e")
            }
            // RFC 7518 §6.3.1: minimal octets, so one key has one encoding (and one thumbprint).
            guard let firstN = modulus.first, firstN != 0, let firstE = exponent.first, firstE != 0 else {
                throw .invalidKey("RSA n and e must be non-empty without leading zero octets")
            }
            let bits = modulus.count * 8 - firstN.leadingZeroBitCount
            guard bits >= Self.minimumRSABits else { throw .invalidKey("RSA modulus of \(bits) bits is below 2048") }
            guard bits <= Self.maximumRSABits else { throw .invalidKey("RSA modulus of \(bits) bits is above 8192") }
            guard exponent.count <= 4 else { throw .invalidKey("RSA exponent too large") }
            do {
                self = .rsa(try _RSA.Signing.PublicKey(n: modulus, e: exponent))
            } catch {
                throw .invalidKey("RSA key rejected by the crypto library")
            }
        case "OKP":
            guard jwk.crv == "Ed25519" else { throw .invalidKey("unsupported OKP curve \(jwk.crv ?? "none")") }
            guard let xString = jwk.x, let x = Base64URL.decode(xString), x.count == 32 else {
                throw .invalidKey("Ed25519 x must be 32 bytes of base64url")
            }
            do { self = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: x)) } catch {
                throw .invalidKey("Ed25519 key rejected by the crypto library")
            }
        default:
            throw .invalidKey("unsupported kty \(jwk.kty)")
        }
    }

    private static func coordinates(_ jwk: JWK, length: Int) throws(JOSEError) -> Data {
        guard let xString = jwk.x, let yString = jwk.y,
            let x = Base64URL.decode(xString), let y = Base64URL.decode(yString)
        else {
            throw .invalidKey("EC jwk needs base64url x and y")
        }
        guard x.count == length, y.count == length else {
            throw .invalidKey("EC coordinates must be exactly \(length) bytes")
        }
        return x + y
    }

    /// The public JWK (no `kid`, `use` or `alg` unless given).
    public func jwk(kid: String? = nil, use: String? = nil, alg: JWSAlgorithm? = nil) -> JWK {
        switch self {
        case .p256(let key):
            let raw = key.rawRepresentation
            return JWK(
                kty: "EC", crv: "P-256", x: Base64URL.encode(raw.prefix(32)), y: Base64URL.encode(raw.suffix(32)),
                kid: kid, use: use, alg: alg?.rawValue)
        case .p384(let key):
            let raw = key.rawRepresentation
            return JWK(
                kty: "EC", crv: "P-384", x: Base64URL.encode(raw.prefix(48)), y: Base64URL.encode(raw.suffix(48)),
                kid: kid, use: use, alg: alg?.rawValue)
        case .rsa(let key):
            // getKeyPrimitives only fails for keys the library could not have produced.
            let primitives = try? key.getKeyPrimitives()
            return JWK(
                kty: "RSA", n: Base64URL.encode(Self.stripLeadingZeros(primitives?.modulus ?? Data())),
                e: Base64URL.encode(Self.stripLeadingZeros(primitives?.publicExponent ?? Data())),
                kid: kid, use: use, alg: alg?.rawValue)
        case .ed25519(let key):
            return JWK(
                kty: "OKP", crv: "Ed25519", x: Base64URL.encode(key.rawRepresentation),
                kid: kid, use: use, alg: alg?.rawValue)
        }
    }

    private static func stripLeadingZeros(_ data: Data) -> Data {
        Data(data.drop(while: { $0 == 0 }))
    }

    /// Verifies a raw JWS signature (R||S for ECDSA, never DER) over `signingInput`.
    ///
    /// Checks the algorithm against the key type first, then exact signature lengths and, for
    /// ECDSA, 0 < r, s < n explicitly (BoringSSL checks too; this keeps the guarantee local).
    public func isValidSignature<S: DataProtocol, D: DataProtocol>(
        _ signature: S, for signingInput: D,
        algorithm: JWSAlgorithm
    ) -> Bool {
        guard supports(algorithm) else { return false }
        switch self {
        case .p256(let key):
            let raw = Array(signature)
            guard raw.count == 64, ECDSARange.isInRange(raw, order: ECDSARange.p256Order),
                let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: raw)
            else { return false }
            return key.isValidSignature(parsed, for: SHA256.hash(data: signingInput))
        case .p384(let key):
            let raw = Array(signature)
            guard raw.count == 96, ECDSARange.isInRange(raw, order: ECDSARange.p384Order),
                let parsed = try? P384.Signing.ECDSASignature(rawRepresentation: raw)
            else { return false }
            return key.isValidSignature(parsed, for: SHA384.hash(data: signingInput))
        case .rsa(let key):
            guard signature.count == (key.keySizeInBits + 7) / 8 else { return false }
            let parsed = _RSA.Signing.RSASignature(rawRepresentation: signature)
            let padding: _RSA.Signing.Padding = algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5
            return key.isValidSignature(parsed, for: SHA256.hash(data: signingInput), padding: padding)
        case .ed25519(let key):
            guard signature.count == 64 else { return false }
            return key.isValidSignature(signature, for: signingInput)
        }
    }
}

/// Range checks for raw ECDSA signatures: both halves must lie in [1, n-1].
enum ECDSARange {
    static let p256Order: [UInt8] = hex("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551")
    static let p384Order: [UInt8] = hex(
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF581A0DB248B0A77AECEC196ACCC52973")

    static func isInRange(_ raw: [UInt8], order: [UInt8]) -> Bool {
        let half = order.count
        guard raw.count == 2 * half else { return false }
        return isScalarInRange(raw[0..<half], order: order) && isScalarInRange(raw[half...], order: order)
    }

    /// Public values (signature halves and the curve order), so a plain comparison is fine.
    private static func isScalarInRange(_ scalar: ArraySlice<UInt8>, order: [UInt8]) -> Bool {
        guard scalar.contains(where: { $0 != 0 }) else { return false }
        for (value, limit) in zip(scalar, order) where value != limit {
            return value < limit
        }
        return false  // equal to n
    }

    private static func hex(_ string: String) -> [UInt8] {
        var bytes = [UInt8]()
        var iterator = string.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(String([high, low]), radix: 16)!)
        }
        return bytes
    }
}
