import Configuration
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import ServiceLifecycle

extension ServiceDescriptor {
    /// `registration-gateway`, port 8081 by default.
    static let registrationGateway = ServiceDescriptor(
        name: "registration-gateway", defaultPort: 8081, needsSystemDatabase: true, resources: .module,
        kafkaOutageDegrades: true)
}

/// Builds the registration-gateway application from the environment; `Main` calls this.
func buildApplication(reader: ConfigReader, settings: ServiceSettings, logger: Logger) throws
    -> some ApplicationProtocol
{
    try buildApplication(settings: settings, gateway: GatewaySettings(reader: reader), logger: logger)
}

/// Builds the registration-gateway application; the tests call this. `fetchStatementJWKS` replaces the
/// HTTPS fetch of software statement issuers' `jwks_uri` documents (tests serve them on loopback).
func buildApplication(
    settings: ServiceSettings, gateway: GatewaySettings, logger: Logger, fetchStatementJWKS: JWKSCache.Fetch? = nil
) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let fetch: JWKSCache.Fetch
    if let fetchStatementJWKS {
        fetch = fetchStatementJWKS
    } else {
        let fetcher = JWKSDocumentFetcher(policy: gateway.outbound)
        fetch = { try await fetcher.fetch($0) }
    }
    let statements = SoftwareStatementVerifier(keys: SoftwareStatementKeySource(logger: logger, fetch: fetch))
    let router = runtime.makeRouter()
    let outbox = runtime.outboxWriter
    // One cache of the tenants' published keys for every token the gateway verifies (DCR and admin tokens).
    let signingKeys = TenantSigningKeyStore(database: runtime.database, ttl: gateway.signingKeyCacheTTL)
    let userTokens = UserTokenVerifier(
        settings: gateway, keys: signingKeys,
        proofs: DPoPProofVerifier(
            configuration: .init(nonceMode: .disabled),
            replayCache: gateway.replayStore.makeCache(database: runtime.database)))
    let directory = TenantDirectory(database: runtime.database)
    let tenants = router.group("t/:tenant").add(middleware: TenantResolverMiddleware(directory: directory))
    RegistrationController(
        registration: RegistrationService(
            settings: gateway, database: runtime.database, userTokens: userTokens, outbox: outbox,
            statements: statements),
        configuration: ClientConfigurationService(
            settings: gateway, database: runtime.database, outbox: outbox, statements: statements),
        rateLimiter: RegistrationRateLimiter(database: runtime.database),
        clientAddresses: gateway.clientAddresses
    ).addRoutes(to: tenants)
    guard let systemDatabase = runtime.systemDatabase else {
        throw ConfigurationError("DATABASE_SYSTEM_URL is required for the registration gateway")
    }
    let adminTokens = AdminTokenVerifier(
        keys: signingKeys, issuerBase: gateway.tokenServicePublicURL,
        platformTenant: gateway.platformTenant)
    AdminController(
        settings: gateway, verifier: adminTokens, database: runtime.database, systemDatabase: systemDatabase,
        tenants: directory,
        outbox: outbox
    ).addRoutes(to: router)
    try AdminPageController(settings: gateway, database: runtime.database, outbox: outbox)
        .addRoutes(to: router.group("admin/t").add(middleware: TenantResolverMiddleware(directory: directory)))
    let expiry = ClientExpiryService(
        systemDatabase: systemDatabase, outbox: outbox, interval: gateway.clientExpiryInterval)
    return runtime.makeApplication(router: router, services: try runtime.makeOutboxServices() + [expiry])
}
