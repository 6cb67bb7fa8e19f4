import Crypto
import Foundation
import _CryptoExtras

/// A private JWS signing key (per-tenant token signing keys, DPoP keys of test and demo clients).
///
/// Storage format: PKCS#8 DER for every algorithm (`pkcs8DERRepresentation`), so one column
/// type fits all; the algorithm is stored next to it and given back on import (RS256 and PS256
/// share the RSA key format). Ed25519 uses the RFC 8410 encoding. Encrypt it with `KeyEnvelope`
/// before it touches the database.
public struct SigningKey: Sendable {
    enum Backing: Sendable {
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    public let algorithm: JWSAlgorithm
    let backing: Backing

    /// RFC 8410 PKCS#8 prefix for an Ed25519 private key: the 32-byte seed follows.
    private static let ed25519PKCS8Prefix: [UInt8] = [
        0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]

    /// Generates a fresh key; RSA sizes below 2048 bits are refused.
    public static func generate(_ algorithm: JWSAlgorithm = .es256, rsaBits: Int = 2048) throws(JOSEError) -> SigningKey
    {
        switch algorithm {
        case .es256: return SigningKey(algorithm: algorithm, backing: .p256(P256.Signing.PrivateKey()))
        case .es384: return SigningKey(algorithm: algorithm, backing: .p384(P384.Signing.PrivateKey()))
        case .edDSA: return SigningKey(algorithm: algorithm, backing: .ed25519(Curve25519.Signing.PrivateKey()))
        case .rs256, .ps256:
            guard rsaBits >= JWSPublicKey.minimumRSABits, rsaBits <= JWSPublicKey.maximumRSABits, rsaBits % 8 == 0
            else {
                throw .invalidKey("RSA key size must be 2048…8192 bits")
            }
            do {
                let key = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: rsaBits))
                return SigningKey(algorithm: algorithm, backing: .rsa(key))
            } catch {
                throw .invalidKey("RSA key generation failed")
            }
        }
    }

    init(algorithm: JWSAlgorithm, backing: Backing) {
        self.algorithm = algorithm
        self.backing = backing
    }

    /// Imports a key exported with `pkcs8DERRepresentation`; the DER must hold a key of `algorithm`'s type.
    public init(algorithm: JWSAlgorithm, pkcs8DER der: Data) throws(JOSEError) {
        self.algorithm = algorithm
        do {
            switch algorithm {
            case .es256: backing = .p256(try P256.Signing.PrivateKey(derRepresentation: der))
            case .es384: backing = .p384(try P384.Signing.PrivateKey(derRepresentation: der))
            case .rs256, .ps256:
                let key = try _RSA.Signing.PrivateKey(derRepresentation: der)
                guard key.keySizeInBits >= JWSPublicKey.minimumRSABits else {
                    throw JOSEError.invalidKey("RSA key below 2048 bits")
                }
                backing = .rsa(key)
            case .edDSA:
                let prefix = Self.ed25519PKCS8Prefix
                guard der.count == prefix.count + 32, der.prefix(prefix.count).elementsEqual(prefix) else {
                    throw JOSEError.invalidKey("not an RFC 8410 Ed25519 PKCS#8 key")
                }
                backing = .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32)))
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw .invalidKey("private key does not parse as \(algorithm.rawValue) PKCS#8")
        }
    }

    /// PKCS#8 DER of the private key, for encrypted storage.
    public var pkcs8DERRepresentation: Data {
        switch backing {
        case .p256(let key): return key.derRepresentation
        case .p384(let key): return key.derRepresentation
        case .rsa(let key): return key.pkcs8DERRepresentation
        case .ed25519(let key): return Data(Self.ed25519PKCS8Prefix) + key.rawRepresentation
        }
    }

    /// The matching public verification key.
    public var publicKey: JWSPublicKey {
        switch backing {
        case .p256(let key): return .p256(key.publicKey)
        case .p384(let key): return .p384(key.publicKey)
        case .rsa(let key): return .rsa(key.publicKey)
        case .ed25519(let key): return .ed25519(key.publicKey)
        }
    }

    /// The public JWK with `use: "sig"` and this key's `alg`, ready for a JWKS document.
    public func publicJWK(kid: String? = nil) -> JWK {
        publicKey.jwk(kid: kid, use: "sig", alg: algorithm)
    }

    /// A bare public JWK (kty and key members only), as embedded in DPoP proof headers.
    public var bareJWK: JWK {
        publicKey.jwk()
    }

    /// Produces a raw JWS signature: R||S for ECDSA (64/96 bytes), PKCS#1 v1.5 or PSS (salt = 32)
    /// for RSA, 64 bytes for EdDSA.
    public func sign<D: DataProtocol>(_ data: D) throws(JOSEError) -> Data {
        do {
            switch backing {
            case .p256(let key): return try key.signature(for: SHA256.hash(data: data)).rawRepresentation
            case .p384(let key): return try key.signature(for: SHA384.hash(data: data)).rawRepresentation
            case .rsa(let key):
                let padding: _RSA.Signing.Padding = algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5
                return try key.signature(for: SHA256.hash(data: data), padding: padding).rawRepresentation
            case .ed25519(let key): return try key.signature(for: data)
            }
        } catch {
            throw .invalidKey("signing failed")
        }
    }
}

extension SigningKey {
    /// Imports a PEM private key an administrator pastes (PKCS#8 `PRIVATE KEY`, as in Apple's `.p8` files,
    /// or SEC 1 / PKCS#1): P-256 signs ES256, RSA (2048 to 4096 bits) RS256; other key types are refused.
    public init(pem: String) throws(JOSEError) {
        let text = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count <= 8192, text.hasPrefix("-----BEGIN ") else {
            throw .invalidKey("not a PEM private key")
        }
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: text) {
            self.init(algorithm: .es256, backing: .p256(key))
            return
        }
        if let key = try? _RSA.Signing.PrivateKey(pemRepresentation: text) {
            // Larger keys gain nothing here and would not fit the sealed-credential column.
            guard (JWSPublicKey.minimumRSABits...4096).contains(key.keySizeInBits) else {
                throw .invalidKey("RSA keys must have 2048 to 4096 bits")
            }
            self.init(algorithm: .rs256, backing: .rsa(key))
            return
        }
        throw .invalidKey("the PEM does not hold a P-256 or RSA private key")
    }
}
