import AsyncHTTPClient
import Hummingbird
import HummingbirdCore
import LatchkeyCore
import LatchkeyServer
import Logging
import NIOCore

/// Replaceable parts, for tests: the clock, the token check and the nonce source.
struct SidecarOverrides: Sendable {
    var clock: any WallClock = SystemWallClock()
    /// Replaces JWT verification (the vector tests' opaque tokens).
    var tokenValidator: (any AccessTokenValidator)?
    /// Replaces the HMAC nonce source (the vectors' fixed nonce).
    var nonceSource: (any DPoPNonceSource)?
    var gaugeInterval: Duration = .seconds(5)
    /// Replaces the per-request deadline of discovery and JWKS fetches (a loaded test machine).
    var keyFetchTimeout: TimeAmount?

    init() {}
}

/// The request path of the sidecar, assembled from its settings: token and proof verification,
/// replay cache, revoked clients, and proxy mode's forwarding or check mode's `/check`.
struct Sidecar: Sendable {
    let settings: SidecarSettings
    let gate: RequestGate
    let resolver: OriginResolver
    let revocations: RevokedClients
    let replayCache: InMemoryDPoPReplayCache
    let tokenCache: AccessTokenCache?
    let httpClient: HTTPClient
    let logger: Logger

    init(
        settings: SidecarSettings, httpClient: HTTPClient, revocations: RevokedClients,
        metrics: SidecarMetrics = .shared,
        overrides: SidecarOverrides = SidecarOverrides(), logger: Logger
    ) throws {
        let clock = overrides.clock
        self.settings = settings
        self.revocations = revocations
        self.httpClient = httpClient
        self.logger = logger

        let nonces: (any DPoPNonceSource)?
        switch settings.nonceMode {
        case .off:
            nonces = nil
        case .required(let secret, let step):
            nonces = try overrides.nonceSource ?? HMACDPoPNonceSource(secret: secret, stepSeconds: step, clock: clock)
        }
        replayCache = InMemoryDPoPReplayCache(maxEntries: settings.replayCacheMaxEntries, clock: clock)
        let proofs = DPoPProofVerifier(
            configuration: .init(
                allowedAlgorithms: Set(settings.proofAlgorithms), iatWindowSeconds: settings.iatWindowSeconds,
                nonceMode: nonces == nil ? .disabled : .required),
            replayCache: replayCache, nonceSource: nonces, clock: clock)

        let tokens: any AccessTokenValidator
        if let override = overrides.tokenValidator {
            tokens = override
            tokenCache = nil
        } else {
            var keyFetcher = IssuerKeyFetcher(client: httpClient, metadataOrigin: settings.issuerMetadataOrigin)
            if let timeout = overrides.keyFetchTimeout { keyFetcher.timeout = timeout }
            let fetcher = keyFetcher
            let keys = JWKSCache(
                maxAge: settings.jwksMaxAgeSeconds, minimumRefreshInterval: settings.jwksMinimumRefreshSeconds,
                clock: clock,
                logger: logger,
                observer: { issuer, succeeded in
                    metrics.countJWKSRefresh(
                        tenant: AccessTokenVerifier.tenant(ofIssuer: issuer)?.rawValue ?? "unknown",
                        succeeded: succeeded)
                },
                fetch: { issuer in try await fetcher.fetchKeys(issuer: issuer) })
            let verifier = try AccessTokenVerifier(
                configuration: .init(
                    issuers: settings.issuers, audiences: settings.audiences,
                    clockSkewSeconds: settings.tokenClockSkewSeconds,
                    maximumLifetimeSeconds: settings.maxTokenLifetimeSeconds),
                keySource: keys, clock: clock)
            let cache = AccessTokenCache(maxEntries: settings.tokenCacheMaxEntries, clock: clock)
            tokens = CachedJWTValidator(verifier: verifier, cache: cache)
            tokenCache = cache
        }

        let authenticator = RequestAuthenticator(
            tokens: tokens, proofs: proofs, revocations: revocations, publicPaths: settings.publicPaths,
            allowBearer: settings.allowBearer)
        gate = RequestGate(
            authenticator: authenticator,
            challenges: Challenges(algorithms: settings.proofAlgorithms, allowBearer: settings.allowBearer),
            nonces: nonces, metrics: metrics)
        resolver = OriginResolver(origins: settings.origins, trustedProxies: settings.trustedProxies)
    }

    /// Check mode: `GET|POST /check`. Proxy mode adds no route: proxied requests never reach the
    /// router (see `server`).
    func addRoutes(to router: Router<LatchkeyRequestContext>) {
        if settings.mode == .check { CheckController(gate: gate, resolver: resolver).addRoutes(to: router) }
    }

    /// The HTTP server every service uses (``LatchkeyHTTPServer``); in proxy mode with a
    /// ``ProxyChannelHandler`` right after the connection guard, so every request is verified and
    /// forwarded inside the channel pipeline and none reaches the router.
    func server(http: HTTPServerSettings) throws -> HTTPServerBuilder {
        switch settings.mode {
        case .check:
            return .latchkey(http)
        case .proxy:
            guard let upstream = settings.upstream else {
                throw ConfigurationError("DPOP_UPSTREAM_URL is required in proxy mode")
            }
            let route = ProxyRoute(
                gate: gate, resolver: resolver,
                proxy: UpstreamProxy(settings: upstream, forwardCredentials: settings.forwardCredentials),
                pools: try UpstreamPools(settings: upstream), logger: logger)
            return .latchkey(http, requestHandlers: { [ProxyChannelHandler(route: route)] })
        }
    }
}
