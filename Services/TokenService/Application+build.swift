import AsyncHTTPClient
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import ServiceLifecycle

extension ServiceDescriptor {
    /// `token-service`, port 8082 by default.
    static let tokenService = ServiceDescriptor(
        name: "token-service", defaultPort: 8082, needsSystemDatabase: true, resources: .module,
        kafkaOutageDegrades: true)
}

/// Builds the token-service application; `Main` and the tests call this.
func buildApplication(
    settings: ServiceSettings, tokenSettings: TokenServiceSettings, logger: Logger
) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let router = runtime.makeRouter()
    guard let systemDatabase = runtime.systemDatabase else {
        throw ConfigurationError("DATABASE_SYSTEM_URL is required for the signing-key lifecycle job")
    }
    let keyLifecycle = SigningKeyLifecycleService(
        rotation: SigningKeyRotation(
            keys: TenantSigningKeys(envelope: tokenSettings.keyEnvelope), database: runtime.database),
        systemDatabase: systemDatabase, interval: tokenSettings.keyLifecycleInterval,
        publishDelay: tokenSettings.keyPublishDelay)
    let outboxServices = try runtime.makeOutboxServices()
    let upstream = UpstreamProviderClient(
        logger: logger, policy: tokenSettings.outbound, timeout: tokenSettings.upstreamTimeout)
    let clients = ClientCache()
    let signers = ActiveSigningKeys()
    let usage = ClientUsageRecorder(database: runtime.database)
    try TokenServiceRoutes(
        runtime: runtime, settings: tokenSettings, upstream: upstream, clients: clients, signers: signers,
        usage: usage
    ).register(on: router)
    let janitor = TokenServiceJanitor(
        systemDatabase: systemDatabase, interval: tokenSettings.janitorInterval,
        batchSize: tokenSettings.janitorBatchSize, maximumBatches: tokenSettings.janitorMaximumBatches)
    var services: [any Service] =
        outboxServices + [
            keyLifecycle, janitor, usage,
            ChangeNotificationListener(
                subscriptions: [clients.subscription, signers.subscription], client: runtime.postgres, logger: logger),
        ]
    if tokenSettings.replayStore == .postgres {
        services.append(ReplayStoreSweeper(store: PostgresDPoPReplayCache(database: runtime.database), logger: logger))
    }
    return runtime.makeApplication(router: router, services: services)
}

/// Wires the token service's controllers onto the router.
struct TokenServiceRoutes {
    let runtime: ServiceRuntime
    let settings: TokenServiceSettings
    /// HTTP client for upstream OpenID Connect providers (federation).
    let upstream: UpstreamProviderClient
    let clients: ClientCache
    let signers: ActiveSigningKeys
    let usage: ClientUsageRecorder

    func register(on router: Router<LatchkeyRequestContext>) throws {
        let database = runtime.database
        let directory = TenantDirectory(database: database)
        let keyStore = TenantKeyStore(
            keys: TenantSigningKeys(envelope: settings.keyEnvelope), database: database, activeSigners: signers)
        let outbox = runtime.outboxWriter
        let clientKeys = JWKSDocumentFetcher(policy: settings.outbound)
        let authentication = TokenEndpointAuthentication(
            database: database, hasher: settings.secretHasher,
            assertions: ClientAssertionVerifier(
                replayCache: settings.replayStore.makeCache(database: database),
                remoteKeys: JWKSCache(clock: settings.clientKeysClock, logger: runtime.logger) {
                    try await clientKeys.fetch($0)
                }),
            cache: clients)
        let dpop = TokenEndpointDPoP(
            nonces: settings.dpopNonces, iatWindowSeconds: settings.dpopIatWindowSeconds,
            replayCache: settings.replayStore.makeCache(database: database))
        let issuer = TokenIssuer(hasher: settings.secretHasher, outbox: outbox, usage: usage)
        let revocation = TokenRevocation(outbox: outbox)

        let discovery = DiscoveryController(settings: settings, keyStore: keyStore, directory: directory)
        discovery.addRootRoutes(to: router)
        let tenantGroup = router.group("t/:tenant").add(middleware: TenantResolverMiddleware(directory: directory))
        discovery.addTenantRoutes(to: tenantGroup)
        TokenController(
            settings: settings, database: database, keyStore: keyStore, authentication: authentication, dpop: dpop,
            issuer: issuer, revocation: revocation
        ).addRoutes(to: tenantGroup)
        let lookup = TokenLookup(keyStore: keyStore, hasher: settings.secretHasher)
        RevocationController(
            settings: settings, database: database, authentication: authentication, lookup: lookup,
            revocation: revocation
        ).addRoutes(to: tenantGroup)
        IntrospectionController(settings: settings, database: database, authentication: authentication, lookup: lookup)
            .addRoutes(to: tenantGroup)
        UserInfoController(settings: settings, database: database, lookup: lookup, dpop: dpop).addRoutes(
            to: tenantGroup)
        let devices = AccountDevices(outbox: outbox)
        AccountAPIController(settings: settings, database: database, lookup: lookup, dpop: dpop, devices: devices)
            .addRoutes(to: tenantGroup)
        try AccountPageController(settings: settings, database: database, devices: devices).addRoutes(to: tenantGroup)
        let authorization = try AuthorizationController(settings: settings, database: database, outbox: outbox)
        authorization.addRoutes(to: tenantGroup)
        try LogoutController(settings: settings, database: database, keyStore: keyStore).addRoutes(to: tenantGroup)
        FederationController(
            settings: settings, database: database, authorization: authorization, upstream: upstream, outbox: outbox
        ).addRoutes(to: tenantGroup)
    }
}
