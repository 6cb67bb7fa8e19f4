import Configuration
import LatchkeyCore

/// The password hasher and its concurrency limit, read the same way by every service that hashes
/// user passwords: `PASSWORD_SCRYPT_LOG_N` (default 17; lower only for tests),
/// `PASSWORD_HASH_CONCURRENCY` (default one per core, at most 4) and `PASSWORD_HASH_WAIT_MS`
/// (how long a request may wait for a slot before 503, default 2000).
public struct PasswordHashingSettings: Sendable {
    public var hasher: PasswordHasher
    public var limiter: PasswordHashingLimiter

    public init(hasher: PasswordHasher = PasswordHasher(), limiter: PasswordHashingLimiter? = nil) {
        self.hasher = hasher
        self.limiter = limiter ?? PasswordHashingLimiter(maximumConcurrent: PasswordHashingLimiter.defaultConcurrency)
    }

    public init(reader: ConfigReader) throws {
        let logN = reader.int(forKey: "password.scrypt.log.n", default: PasswordHasher.Parameters.recommended.logN)
        guard (4...20).contains(logN) else { throw ConfigurationError("PASSWORD_SCRYPT_LOG_N must be 4…20") }
        let concurrency = reader.int(forKey: "password.hash.concurrency", default: PasswordHashingLimiter.defaultConcurrency)
        guard (1...256).contains(concurrency) else { throw ConfigurationError("PASSWORD_HASH_CONCURRENCY must be 1…256") }
        let waitMilliseconds = reader.int(forKey: "password.hash.wait.ms", default: 2000)
        guard (0...60_000).contains(waitMilliseconds) else { throw ConfigurationError("PASSWORD_HASH_WAIT_MS must be 0…60000") }
        var parameters = PasswordHasher.Parameters.recommended
        parameters.logN = logN
        self.init(
            hasher: PasswordHasher(parameters: parameters),
            limiter: PasswordHashingLimiter(maximumConcurrent: concurrency, maximumWait: .milliseconds(waitMilliseconds)))
    }
}
