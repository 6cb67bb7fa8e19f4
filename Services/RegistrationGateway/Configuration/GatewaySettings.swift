import Configuration
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// Settings only the registration gateway reads (listed in docs/configuration.md).
struct GatewaySettings: Sendable {
    /// External base URL of this gateway; registration endpoint = `{publicURL}/t/{tenant}/register`.
    var publicURL: String
    /// External base URL of the token service; a tenant's issuer is `{tokenServicePublicURL}/t/{tenant}`.
    var tokenServicePublicURL: String
    /// Keys the hashes of client secrets, registration access tokens and initial access tokens.
    var secretHasher: KeyedHasher
    /// Bootstrap admin key (creates the very first tenant); nil disables bootstrap.
    var adminBootstrapKey: String?
    /// How long a verification key found for a DCR token is cached before it is read again.
    var signingKeyCacheTTL: Duration
    /// The tenant whose admin tokens may administer every tenant (and create new ones), if any.
    var platformTenant: TenantSlug?
    /// Pause between runs of the inactive-client expiry job.
    var clientExpiryInterval: Duration
    /// Hashes passwords of users created through the admin API (scrypt, like the token service's sign-up).
    var passwordHasher = PasswordHasher()
    /// How many of those hashes may run at once (each holds 128 MiB at the default cost).
    var hashingLimiter = PasswordHashingLimiter(maximumConcurrent: PasswordHashingLimiter.defaultConcurrency)
    /// `TRUSTED_PROXIES`: whose forwarded-for headers name the client address the rate limits count.
    var clientAddresses = ClientAddressResolver.peerOnly
    /// Seals keys staged by `POST /admin/tenants/{tenant}/keys/rotate` (the token service's KEK); nil
    /// turns that action off (503), everything else works without it. Also seals the client secrets of
    /// upstream identity providers that tenant admins give in their policies (503 without it).
    var keyEnvelope: KeyEnvelope?
    /// `env:`/`file:` references the operator allows as upstream client secrets (none by default).
    var upstreamSecretReferences = SecretReferenceAllowList()
    /// Where outgoing requests (software-statement `jwks_uri`) and upstream issuers may point.
    var outbound = OutboundPolicy.publicHTTPSOnly
    /// Where the DPoP proofs of bound DCR tokens are remembered (`DPOP_REPLAY_STORE`).
    var replayStore: DPoPReplayStore = .memory

    init(
        publicURL: String, tokenServicePublicURL: String, secretHasher: KeyedHasher,
        adminBootstrapKey: String? = nil, signingKeyCacheTTL: Duration = .seconds(60),
        platformTenant: TenantSlug? = nil,
        clientExpiryInterval: Duration = .seconds(300)
    ) throws {
        self.publicURL = try SettingsReader.baseURL(publicURL, name: "REGISTRATION_GATEWAY_PUBLIC_URL")
        self.tokenServicePublicURL = try SettingsReader.baseURL(tokenServicePublicURL, name: "TOKEN_SERVICE_PUBLIC_URL")
        self.secretHasher = secretHasher
        self.adminBootstrapKey = adminBootstrapKey
        self.signingKeyCacheTTL = signingKeyCacheTTL
        self.platformTenant = platformTenant
        self.clientExpiryInterval = clientExpiryInterval
    }

    /// Reads `REGISTRATION_GATEWAY_PUBLIC_URL`, `TOKEN_SERVICE_PUBLIC_URL`, `SECRET_HASH_KEY`,
    /// `ADMIN_BOOTSTRAP_KEY`, `SIGNING_KEY_CACHE_SECONDS`, `PLATFORM_TENANT`, `CLIENT_EXPIRY_INTERVAL_SECONDS`
    /// the optional `KEY_ENCRYPTION_KEY` (key rotation, sealed upstream client secrets),
    /// `UPSTREAM_SECRET_REFERENCES`, `OUTBOUND_ALLOW_LOOPBACK_HTTP`, `OUTBOUND_ALLOWED_NETWORKS`, `TRUSTED_PROXIES`,
    /// `PASSWORD_SCRYPT_LOG_N`, `PASSWORD_HASH_CONCURRENCY`, `PASSWORD_HASH_WAIT_MS` and `DPOP_REPLAY_STORE`.
    init(reader: ConfigReader) throws {
        let env = SettingsReader(reader)
        let publicURL = try env.required(
            "registration.gateway.public.url", example: "e.g. https://register.example.com")
        let tokenURL = try env.required(
            "token.service.public.url", example: "the issuer base, e.g. https://login.example.com")
        let hasher = try env.requiredSecret(
            "secret.hash.key", expected: "at least 32 bytes, base64", example: "base64 of ≥ 32 random bytes"
        ) {
            try KeyedHasher(configuration: $0)
        }
        let bootstrap = try env.secretText("admin.bootstrap.key")
        if let bootstrap, bootstrap.utf8.count < 32 {
            throw ConfigurationError("ADMIN_BOOTSTRAP_KEY must be at least 32 characters")
        }
        try self.init(
            publicURL: publicURL, tokenServicePublicURL: tokenURL, secretHasher: hasher, adminBootstrapKey: bootstrap,
            signingKeyCacheTTL: try env.seconds("signing.key.cache.seconds", default: 60, range: 0...),
            platformTenant: try env.tenant("platform.tenant"),
            clientExpiryInterval: try env.seconds("client.expiry.interval.seconds", default: 300, range: 1...))
        upstreamSecretReferences = try SecretReferenceAllowList(reader: reader)
        outbound = try OutboundPolicy(reader: reader)
        replayStore = try DPoPReplayStore(reader: reader)
        let hashing = try PasswordHashingSettings(reader: reader)
        passwordHasher = hashing.hasher
        hashingLimiter = hashing.limiter
        clientAddresses = try ClientAddressResolver(reader: reader)
        keyEnvelope = try env.secret("key.encryption.key", expected: "32 bytes, base64") {
            try KeyEnvelope(configuration: $0)
        }
    }

    /// The RFC 7591 registration endpoint of `tenant`: the audience of DCR tokens.
    func registrationEndpoint(tenant: String) -> String { "\(publicURL)/t/\(tenant)/register" }

    /// RFC 7592 `registration_client_uri` of one client.
    func registrationClientURI(tenant: String, clientID: String) -> String {
        "\(registrationEndpoint(tenant: tenant))/\(clientID)"
    }

    /// The token service's issuer for `tenant`.
    func issuer(tenant: String) -> String { "\(tokenServicePublicURL)/t/\(tenant)" }
}
