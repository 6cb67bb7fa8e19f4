import Crypto
import Foundation
import _CryptoExtras

/// User password hashing with scrypt (RFC 7914) and a per-user random salt.
///
/// Encoded form (self-describing, so parameters can be raised later):
/// `scrypt$ln=17,r=8,p=1$<salt base64url>$<hash base64url>` where N = 2^ln.
/// Passwords are NFC-normalised first so the same password typed on different keyboards matches.
/// Hashing holds `128 · N · r` bytes (128 MiB at the defaults) for a few hundred milliseconds: run it
/// through a ``PasswordHashingLimiter``, never inside a database transaction.
public struct PasswordHasher: Sendable {
    /// scrypt cost parameters.
    public struct Parameters: Sendable, Hashable, CustomStringConvertible {
        /// log2 of the CPU/memory cost N.
        public var logN: Int
        /// Block size r.
        public var blockSize: Int
        /// Parallelism p.
        public var parallelism: Int

        public init(logN: Int, blockSize: Int, parallelism: Int) {
            self.logN = logN
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// N = 2^17, r = 8, p = 1 (128 MiB): OWASP's current minimum for scrypt.
        public static let recommended = Parameters(logN: 17, blockSize: 8, parallelism: 1)
        /// Cost before the move to ``recommended``; such hashes are upgraded at the next sign-in.
        public static let legacy = Parameters(logN: 15, blockSize: 8, parallelism: 1)
        /// Cheap parameters for tests only.
        public static let testing = Parameters(logN: 4, blockSize: 8, parallelism: 1)

        /// Bounds also applied to stored hashes, so a tampered row cannot make verification
        /// allocate gigabytes. swift-crypto 4.5.2 sizes scrypt's memory limit itself
        /// (128·N·r·p + one page), which fits only r ≤ 16 when p = 1.
        public var isWithinLimits: Bool {
            (1...20).contains(logN) && (1...16).contains(blockSize) && (1...16).contains(parallelism)
        }

        public var description: String { "ln=\(logN),r=\(blockSize),p=\(parallelism)" }

        /// Bytes scrypt holds while hashing: `128 · N · r · p`.
        public var memoryBytes: Int { 128 * (1 << logN) * blockSize * parallelism }

        /// True when any cost is below `other`'s.
        public func isWeaker(than other: Parameters) -> Bool {
            logN < other.logN || blockSize < other.blockSize || parallelism < other.parallelism
        }
    }

    /// Why hashing failed.
    public enum Failure: Error, Sendable, Equatable {
        case emptyPassword
        case parametersOutOfRange
        case derivationFailed
    }

    public let parameters: Parameters
    public let saltByteCount: Int
    public let hashByteCount: Int

    public init(parameters: Parameters = .recommended, saltByteCount: Int = 16, hashByteCount: Int = 32) {
        precondition(parameters.isWithinLimits, "scrypt parameters out of range")
        precondition(saltByteCount >= 16 && hashByteCount >= 16, "salt and hash must be at least 128 bits")
        self.parameters = parameters
        self.saltByteCount = saltByteCount
        self.hashByteCount = hashByteCount
    }

    /// Hashes with a fresh random salt and returns the encoded string.
    public func hash(_ password: String) throws(Failure) -> String {
        let salt = SecureRandom.bytes(count: saltByteCount)
        let derived = try Self.derive(password, salt: salt, parameters: parameters, length: hashByteCount)
        return "scrypt$\(parameters)$\(Base64URL.encode(salt))$\(Base64URL.encode(derived))"
    }

    /// True when `password` matches `encoded`; malformed or out-of-range encodings never match.
    public func verify(_ password: String, against encoded: String) -> Bool {
        guard let stored = Self.parse(encoded),
            let derived = try? Self.derive(
                password, salt: stored.salt, parameters: stored.parameters,
                length: stored.hash.count)
        else {
            return false
        }
        return ConstantTime.equals(derived, stored.hash)
    }

    /// True when `encoded` was made with other parameters or sizes than this hasher's (or is
    /// unreadable): re-hash after the next successful login.
    public func needsRehash(_ encoded: String) -> Bool {
        guard let stored = Self.parse(encoded) else { return true }
        return stored.parameters != parameters || stored.salt.count != saltByteCount
            || stored.hash.count != hashByteCount
    }

    /// True when `encoded` is weaker than this hasher's settings (cheaper parameters, shorter salt or
    /// hash) or unreadable: worth replacing after a successful sign-in. A deliberately lowered setting
    /// never downgrades stronger stored hashes.
    public func needsUpgrade(_ encoded: String) -> Bool {
        guard let stored = Self.parse(encoded) else { return true }
        return stored.parameters.isWeaker(than: parameters) || stored.salt.count < saltByteCount
            || stored.hash.count < hashByteCount
    }

    struct Stored {
        let parameters: Parameters
        let salt: [UInt8]
        let hash: [UInt8]
    }

    static func parse(_ encoded: String) -> Stored? {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "scrypt" else { return nil }
        var values: [String: Int] = [:]
        for item in parts[1].split(separator: ",", omittingEmptySubsequences: false) {
            let pair = item.split(separator: "=", omittingEmptySubsequences: false)
            guard pair.count == 2, let value = Int(pair[1]), values[String(pair[0])] == nil else { return nil }
            values[String(pair[0])] = value
        }
        guard values.count == 3, let logN = values["ln"], let r = values["r"], let p = values["p"] else { return nil }
        let parameters = Parameters(logN: logN, blockSize: r, parallelism: p)
        guard parameters.isWithinLimits,
            let salt = Base64URL.decodeBytes(parts[2].utf8), salt.count >= 8,
            let hash = Base64URL.decodeBytes(parts[3].utf8), (16...64).contains(hash.count)
        else { return nil }
        return Stored(parameters: parameters, salt: salt, hash: hash)
    }

    static func derive(_ password: String, salt: [UInt8], parameters: Parameters, length: Int) throws(Failure)
        -> [UInt8]
    {
        // swift-crypto force-unwraps the password buffer's base address, so empty input must not reach it.
        let normalised = Array(password.precomposedStringWithCanonicalMapping.utf8)
        guard !normalised.isEmpty else { throw .emptyPassword }
        guard parameters.isWithinLimits else { throw .parametersOutOfRange }
        do {
            let key = try KDF.Scrypt.deriveKey(
                from: normalised, salt: salt, outputByteCount: length,
                rounds: 1 << parameters.logN, blockSize: parameters.blockSize,
                parallelism: parameters.parallelism)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw .derivationFailed
        }
    }
}
