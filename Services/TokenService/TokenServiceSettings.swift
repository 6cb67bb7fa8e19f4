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
    /// The clock of the cache of clients' `jwks_uri` key sets (tests move it past the refresh interval).
    var clientKeysClock: any WallClock = SystemWallClock()
    /// The longest a request to an upstream identity provider (discovery, JWKS, code exchange) may take.
    var upstreamTimeout: Duration = .seconds(5)
    /// `PLATFORM_TENANT`: its sign-up page is closed unless its policy opens it (`self_signup`).
    var platformTenant: TenantSlug?
    /// Where DPoP proof and client-assertion `jti`s are remembered: this process (`memory`, one replica)
    /// or PostgreSQL (`postgres`, shared by every replica).
    var replayStore: DPoPReplayStore = .memory
    /// Pause between janitor runs (expired codes, token records, sessions, sign-in counters).
    var janitorInterval: Duration = .seconds(300)
    /// Rows one janitor statement deletes at most, and statements per table and run.
    var janitorBatchSize = 1000
    var janitorMaximumBatches = 20

    init(
        publicURL: String, registrationGatewayPublicURL: String, keyEnvelope: KeyEnvelope, secretHasher: KeyedHasher,
        dpopNonces: HMACDPoPNonceSource, dpopIatWindowSeconds: Int64 = 60,
        passwordHasher: PasswordHasher = PasswordHasher()
    ) throws {
        self.publicURL = try SettingsReader.baseURL(publicURL, name: "TOKEN_SERVICE_PUBLIC_URL")
        self.registrationGatewayPublicURL = try SettingsReader.baseURL(
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
    /// `OUTBOUND_ALLOW_LOOPBACK_HTTP`, `OUTBOUND_ALLOWED_NETWORKS`, `UPSTREAM_TIMEOUT_SECONDS`, `PLATFORM_TENANT`, `TRUSTED_PROXIES`,
    /// `PASSWORD_SCRYPT_LOG_N`, `PASSWORD_HASH_CONCURRENCY`, `PASSWORD_HASH_WAIT_MS`, `DPOP_REPLAY_STORE`,
    /// `JANITOR_INTERVAL_SECONDS`, `JANITOR_BATCH_SIZE`, `JANITOR_MAX_BATCHES`.
    init(reader: ConfigReader) throws {
        let env = SettingsReader(reader)
        let previous = try env.secretList("key.encryption.key.previous")
        let envelope = try env.requiredSecret("key.encryption.key", expected: "32 bytes, base64") {
            try KeyEnvelope(configuration: $0, previous: previous)
        }
        let hasher = try env.requiredSecret("secret.hash.key", expected: "at least 32 bytes, base64") {
            try KeyedHasher(configuration: $0)
        }
        let nonces = try env.requiredSecret("dpop.nonce.secret", expected: "at least 32 bytes, base64") {
            try HMACDPoPNonceSource(configuration: $0)
        }
        try self.init(
            publicURL: try env.required("token.service.public.url"),
            registrationGatewayPublicURL: try env.required("registration.gateway.public.url"),
            keyEnvelope: envelope, secretHasher: hasher, dpopNonces: nonces,
            dpopIatWindowSeconds: Int64(try env.int("dpop.iat.window.seconds", default: 60, range: 1...600)))
        keyLifecycleInterval = try env.seconds("signing.key.lifecycle.interval.seconds", default: 60, range: 1...)
        keyPublishDelay = try env.seconds("signing.key.publish.delay.seconds", default: 600, range: 0...86_400)
        upstreamSecretReferences = try SecretReferenceAllowList(reader: reader)
        outbound = try OutboundPolicy(reader: reader)
        upstreamTimeout = try env.seconds("upstream.timeout.seconds", default: 5, range: 1...60)
        replayStore = try DPoPReplayStore(reader: reader)
        let hashing = try PasswordHashingSettings(reader: reader)
        passwordHasher = hashing.hasher
        hashingLimiter = hashing.limiter
        clientAddresses = try ClientAddressResolver(reader: reader)
        platformTenant = try env.tenant("platform.tenant")
        janitorInterval = try env.seconds("janitor.interval.seconds", default: 300, range: 1...86_400)
        janitorBatchSize = try env.int("janitor.batch.size", default: 1000, range: 1...100_000)
        janitorMaximumBatches = try env.int("janitor.max.batches", default: 20, range: 1...10_000)
    }
}
