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
        let env = SettingsReader(reader)
        var parameters = PasswordHasher.Parameters.recommended
        parameters.logN = try env.int("password.scrypt.log.n", default: parameters.logN, range: 4...20)
        let concurrency = try env.int(
            "password.hash.concurrency", default: PasswordHashingLimiter.defaultConcurrency, range: 1...256)
        let wait = try env.milliseconds("password.hash.wait.ms", default: 2000, range: 0...60_000)
        self.init(
            hasher: PasswordHasher(parameters: parameters),
            limiter: PasswordHashingLimiter(maximumConcurrent: concurrency, maximumWait: wait))
    }
}
