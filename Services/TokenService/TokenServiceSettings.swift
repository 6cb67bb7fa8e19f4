import Configuration
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// Settings only the token service reads (listed in docs/configuration.md).
struct TokenServiceSettings: Sendable {
    /// External origin of this service; issuers are `{publicURL}/t/{tenant}` and DPoP `htu` is computed from it.
    var publicURL: String
    /// External origin of the registration gateway; the `registration_endpoint` and the `dcr` audience.
    var registrationGatewayPublicURL: String
    /// Seals tenants' private signing keys (AES-GCM).
    var keyEnvelope: KeyEnvelope
    /// Keyed hash for client secrets, codes and refresh tokens at rest.
    var secretHasher: KeyedHasher
    /// Stateless DPoP nonces shared across replicas.
    var dpopNonces: HMACDPoPNonceSource
    /// Accepted |now − iat| of DPoP proofs, seconds.
    var dpopIatWindowSeconds: Int64
    /// scrypt for user passwords (sign-in and sign-up pages); tests use cheap parameters.
    var passwordHasher: PasswordHasher
    /// How many password hashes may run at once (each holds 128 MiB at the default cost); excess waits
    /// briefly, then gets 503.
    var hashingLimiter = PasswordHashingLimiter(maximumConcurrent: PasswordHashingLimiter.defaultConcurrency)
    /// `TRUSTED_PROXIES`: whose forwarded-for headers name the client address the sign-in limits count.
    var clientAddresses = ClientAddressResolver.peerOnly
    /// Pause between runs of the signing-key lifecycle job (activation, retirement, policy algorithm changes).
    var keyLifecycleInterval: Duration = .seconds(60)
    /// How long a staged key is published before it signs: at least the JWKS cache lifetime of verifiers.
    var keyPublishDelay: Duration = .seconds(600)
    /// `env:`/`file:` references the operator allows as upstream client secrets (none by default).
    var upstreamSecretReferences = SecretReferenceAllowList()
    /// Where requests to upstream identity providers may go.
    var outbound = OutboundPolicy.publicHTTPSOnly
    /// `PLATFORM_TENANT`: its sign-up page is closed unless its policy opens it (`self_signup`).
    var platformTenant: TenantSlug?
    /// Where DPoP proof and client-assertion `jti`s are remembered: this process (`memory`, one replica)
    /// or PostgreSQL (`postgres`, shared by every replica).
    var replayStore: DPoPReplayStore = .memory

    init(
        publicURL: String, registrationGatewayPublicURL: String, keyEnvelope: KeyEnvelope, secretHasher: KeyedHasher,
        dpopNonces: HMACDPoPNonceSource, dpopIatWindowSeconds: Int64 = 60, passwordHasher: PasswordHasher = PasswordHasher()
    ) throws {
        self.publicURL = try Self.origin(publicURL, name: "TOKEN_SERVICE_PUBLIC_URL")
        self.registrationGatewayPublicURL = try Self.origin(
            registrationGatewayPublicURL, name: "REGISTRATION_GATEWAY_PUBLIC_URL")
        self.keyEnvelope = keyEnvelope
        self.secretHasher = secretHasher
        self.dpopNonces = dpopNonces
        self.dpopIatWindowSeconds = dpopIatWindowSeconds
        self.passwordHasher = passwordHasher
    }

    /// Reads `TOKEN_SERVICE_PUBLIC_URL`, `REGISTRATION_GATEWAY_PUBLIC_URL`, `KEY_ENCRYPTION_KEY`
    /// (+ `KEY_ENCRYPTION_KEY_PREVIOUS`), `SECRET_HASH_KEY`, `DPOP_NONCE_SECRET`, `DPOP_IAT_WINDOW_SECONDS`,
    /// `SIGNING_KEY_LIFECYCLE_INTERVAL_SECONDS`, `SIGNING_KEY_PUBLISH_DELAY_SECONDS`, `UPSTREAM_SECRET_REFERENCES`,
    /// `OUTBOUND_ALLOW_LOOPBACK_HTTP`, `OUTBOUND_ALLOWED_NETWORKS`, `PLATFORM_TENANT`, `TRUSTED_PROXIES`,
    /// `PASSWORD_SCRYPT_LOG_N`, `PASSWORD_HASH_CONCURRENCY`, `PASSWORD_HASH_WAIT_MS`, `DPOP_REPLAY_STORE`.
    init(reader: ConfigReader) throws {
        func required(_ key: ConfigKey, _ name: String, secret: Bool = false) throws -> String {
            guard let value = reader.string(forKey: key, isSecret: secret), !value.isEmpty else {
                throw ConfigurationError("\(name) is required")
            }
            return value
        }
        let kek = try required("key.encryption.key", "KEY_ENCRYPTION_KEY", secret: true)
        let previous = reader.string(forKey: "key.encryption.key.previous", isSecret: true)
            .map { $0.split(separator: ",").map(String.init) } ?? []
        let envelope: KeyEnvelope
        do { envelope = try KeyEnvelope(configuration: kek, previous: previous) } catch {
            throw ConfigurationError("KEY_ENCRYPTION_KEY must be 32 bytes, base64: \(error)")
        }
        let hasher: KeyedHasher
        do { hasher = try KeyedHasher(configuration: try required("secret.hash.key", "SECRET_HASH_KEY", secret: true)) } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError("SECRET_HASH_KEY must be at least 32 bytes, base64: \(error)")
        }
        let nonces: HMACDPoPNonceSource
        do {
            nonces = try HMACDPoPNonceSource(configuration: try required("dpop.nonce.secret", "DPOP_NONCE_SECRET", secret: true))
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError("DPOP_NONCE_SECRET must be at least 32 bytes, base64: \(error)")
        }
        let window = reader.int(forKey: "dpop.iat.window.seconds", default: 60)
        guard window > 0, window <= 600 else { throw ConfigurationError("DPOP_IAT_WINDOW_SECONDS must be 1…600") }
        let lifecycleInterval = reader.int(forKey: "signing.key.lifecycle.interval.seconds", default: 60)
        guard lifecycleInterval > 0 else { throw ConfigurationError("SIGNING_KEY_LIFECYCLE_INTERVAL_SECONDS must be > 0") }
        let publishDelay = reader.int(forKey: "signing.key.publish.delay.seconds", default: 600)
        guard publishDelay >= 0, publishDelay <= 86_400 else {
            throw ConfigurationError("SIGNING_KEY_PUBLISH_DELAY_SECONDS must be 0…86400")
        }
        try self.init(
            publicURL: try required("token.service.public.url", "TOKEN_SERVICE_PUBLIC_URL"),
            registrationGatewayPublicURL: try required("registration.gateway.public.url", "REGISTRATION_GATEWAY_PUBLIC_URL"),
            keyEnvelope: envelope, secretHasher: hasher, dpopNonces: nonces, dpopIatWindowSeconds: Int64(window))
        keyLifecycleInterval = .seconds(lifecycleInterval)
        keyPublishDelay = .seconds(publishDelay)
        upstreamSecretReferences = try SecretReferenceAllowList(reader: reader)
        outbound = try OutboundPolicy(reader: reader)
        replayStore = try DPoPReplayStore(reader: reader)
        let hashing = try PasswordHashingSettings(reader: reader)
        passwordHasher = hashing.hasher
        hashingLimiter = hashing.limiter
        clientAddresses = try ClientAddressResolver(reader: reader)
        if let raw = reader.string(forKey: "platform.tenant"), !raw.isEmpty {
            guard let slug = TenantSlug(rawValue: raw) else { throw ConfigurationError("PLATFORM_TENANT is not a valid tenant id") }
            platformTenant = slug
        }
    }

    /// An absolute http(s) URL without query or fragment, trailing slash removed.
    static func origin(_ value: String, name: String) throws -> String {
        guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil, url.query == nil, url.fragment == nil
        else { throw ConfigurationError("\(name) must be an absolute http(s) URL without query or fragment") }
        var trimmed = value
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        return trimmed
    }
}
