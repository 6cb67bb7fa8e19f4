import Crypto
import Foundation

/// Cryptographically secure random bytes from the kernel's generator (``RandomPool``).
public enum SecureRandom {
    public static func bytes(count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            RandomPool.fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }
}

/// Opaque bearer secrets: refresh tokens, authorization codes, client secrets, registration tokens.
public enum SecretTokens {
    /// Smallest accepted entropy, in bytes (256 bits).
    public static let minimumByteCount = 32

    /// A random token: optional readable prefix (e.g. "lk_rt_") followed by base64url of
    /// `byteCount` (≥ 32) random bytes. The prefix helps secret scanners, it adds no entropy.
    public static func generate(prefix: String = "", byteCount: Int = 32) -> String {
        precondition(byteCount >= minimumByteCount, "secret tokens need at least 256 bits of entropy")
        return prefix + Base64URL.encode(SecureRandom.bytes(count: byteCount))
    }
}

/// Keyed hashing of secrets at rest: HMAC-SHA256 under a server key, base64url output.
///
/// Secrets stored this way cannot be recovered or brute-forced from a database dump without the
/// server key, yet lookups stay deterministic (hash the presented secret, look up by hash).
public struct KeyedHasher: Sendable {
    /// HMAC with the key already absorbed: each hash starts from a copy of it instead of hashing the padded
    /// key again (every client-secret check on the token endpoint hashes once).
    private let keyed: HMAC<SHA256>

    /// The key must be at least 256 bits.
    public init(key: SymmetricKey) throws(KeyMaterial.Failure) {
        guard key.bitCount >= 256 else { throw .tooShort(minimumBytes: 32) }
        keyed = HMAC(key: key)
    }

    /// Builds the hasher from a configuration value (base64 or base64url of ≥ 32 bytes).
    public init(configuration value: String) throws(KeyMaterial.Failure) {
        try self.init(key: try KeyMaterial.symmetricKey(fromConfiguration: value))
    }

    /// base64url(HMAC-SHA256(key, UTF-8 secret)).
    public func hash(_ secret: String) -> String {
        var mac = keyed
        var secret = secret
        secret.withUTF8 { mac.update(data: UnsafeRawBufferPointer($0)) }
        return Base64URL.encode(mac.finalize())
    }

    /// True when `secret` hashes to `storedHash`, compared in constant time.
    public func matches(_ secret: String, storedHash: String) -> Bool {
        ConstantTime.equals(hash(secret), storedHash)
    }
}
