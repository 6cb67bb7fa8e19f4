import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import TokenService

/// One token-service application against the test database and an embedded Kafka cluster, plus the
/// SQL helpers that create what the gateway and the authorize pages would (tenants, clients, users, codes).
struct TokenServiceHarness: Sendable {
    static let publicURL = "https://auth.example.test"
    static let gatewayURL = "https://register.example.test"

    let tenant: String
    /// The origin issuers are built from: `publicURL`, or the real loopback address in ``runListening``.
    var origin: String = TokenServiceHarness.publicURL
    let settings: TokenServiceSettings
    let database: Database
    /// The PostgreSQL database `database` is connected to (for the relay-role queries).
    let databaseName: String
    /// The service's management port (`/metrics`).
    var managementPort = 0

    var issuer: String { "\(origin)/t/\(tenant)" }
    var tokenURL: String { "\(issuer)/token" }
    var tokenPath: String { "/t/\(tenant)/token" }

    static func makeSettings(publicURL: String = publicURL) throws -> TokenServiceSettings {
        var settings = try TokenServiceSettings(
            publicURL: publicURL + "/", registrationGatewayPublicURL: gatewayURL,
            keyEnvelope: KeyEnvelope(configuration: TestEnvironment.keyEncryptionKey),
            secretHasher: KeyedHasher(configuration: KeyMaterial.generateConfigurationValue()),
            dpopNonces: HMACDPoPNonceSource(configuration: KeyMaterial.generateConfigurationValue()),
            passwordHasher: PasswordHasher(parameters: .testing))
        // The federation tests' upstream provider is another tenant of this service on loopback http, and
        // its client secret a temporary file an operator would have allowed.
        settings.outbound = OutboundPolicy(allowLoopbackHTTP: true)
        // That provider is this test process, which a loaded machine can keep busy for seconds.
        settings.upstreamTimeout = .seconds(30)
        settings.upstreamSecretReferences = SecretReferenceAllowList(
            ["file:" + FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-up-").path + "*"])
        return settings
    }

    /// Creates a fresh tenant with `policy`, runs the application and hands `body` a client and the fixture.
    /// `configure` adjusts the service's settings (hashing limits, trusted proxies) before it starts.
    static func run(
        policy: String = "{}", setup: TestingSetup = .router,
        configure: (inout TokenServiceSettings) -> Void = { _ in },
        _ body: @Sendable (any TestClientProtocol, TokenServiceHarness) async throws -> Void
    ) async throws {
        try await runApplication(
            policy: { _ in policy }, setup: setup, origin: publicURL, replicaPort: nil, configure: configure, body)
    }

    /// Like ``run`` over real sockets, plus a second replica (same settings and database) listening on a
    /// fixed loopback port that is the public URL, so the service can call its own endpoints over HTTP
    /// (federation with another tenant as the upstream provider). `policy` gets that origin.
    static func runListening(
        policy: @Sendable (String) -> String,
        _ body: @Sendable (any TestClientProtocol, TokenServiceHarness) async throws -> Void
    ) async throws {
        let port = ServiceProcess.freePort()
        try await runApplication(
            policy: policy, setup: .live, origin: "http://127.0.0.1:\(port)", replicaPort: port, body)
    }

    /// Scopes the tests' clients use; grants issue only scopes the tenant policy allows, so a policy that
    /// does not list its own gets these.
    static let testScopes = [
        "openid", "profile", "email", "offline_access", "api", "read", "write", "a", "b", "orders:read",
    ]

    static func withTestScopes(_ policy: String) -> String {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(policy.utf8))) as? [String: Any],
            object["allowed_scopes"] == nil
        else { return policy }
        object["allowed_scopes"] = testScopes
        return (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) }
            ?? policy
    }

    private static func runApplication(
        policy: (String) -> String, setup: TestingSetup, origin: String, replicaPort: Int?,
        configure: (inout TokenServiceSettings) -> Void = { _ in },
        _ body: @Sendable (any TestClientProtocol, TokenServiceHarness) async throws -> Void
    ) async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let databaseName = try await OwnDatabase.shared.name()
        var serviceSettings = try await TestServiceSettings.make(.tokenService, kafkaBrokers: cluster.bootstrapServers)
        serviceSettings.database?.database = databaseName
        serviceSettings.systemDatabase?.database = databaseName
        var settings = try makeSettings(publicURL: origin)
        configure(&settings)
        try await withPostgresClient(try #require(serviceSettings.database)) { client in
            let database = Database(client: client, logger: TestEnvironment.logger)
            let fixture = TokenServiceHarness(
                tenant: TestEnvironment.uniqueTenant("tok"), origin: origin, settings: settings, database: database,
                databaseName: databaseName, managementPort: serviceSettings.managementPort)
            try await TestDatabase.createTenant(
                fixture.tenant, in: database, policy: Self.withTestScopes(policy(origin)))
            // Built right before it runs: an application released unrun leaves its HTTP client without the
            // shutdown AsyncHTTPClient insists on (it traps), e.g. when the tenant setup above fails.
            let app = try buildApplication(
                settings: serviceSettings, tokenSettings: settings, logger: TestServiceSettings.logger)
            guard let replicaPort else {
                return try await app.journaledTest(setup) { client in try await body(client, fixture) }
            }
            // HummingbirdTesting binds port 0, so the public URL is served by a second replica.
            var replicaSettings = serviceSettings
            replicaSettings.port = replicaPort
            // Each replica has its own management listener; sharing one port, the second could not start.
            replicaSettings.managementPort = ServiceProcess.freePort()
            let replica = try buildApplication(
                settings: replicaSettings, tokenSettings: settings, logger: TestServiceSettings.logger)
            let group = ServiceGroup(configuration: .init(services: [replica], logger: TestServiceSettings.logger))
            // The replica always ends with a graceful shutdown: a server cancelled while it holds accepted
            // connections it has not handled yet traps.
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                let outcome: Result<Void, any Error>
                do {
                    try await Self.waitUntilListening(replicaPort)
                    try await app.journaledTest(setup) { client in try await body(client, fixture) }
                    outcome = .success(())
                } catch {
                    outcome = .failure(error)
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                try outcome.get()
            }
        }
    }

    /// Polls `/openapi.json` on loopback `port` until it answers (the replica has bound its socket).
    private static func waitUntilListening(_ port: Int) async throws {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/openapi.json")
        guard
            try await eventually(
                within: .seconds(20), { (try? await HTTPClient.shared.execute(request, timeout: .seconds(2))) != nil })
        else {
            struct NotListening: Error {}
            throw NotListening()
        }
    }

    /// The same fixture for another tenant of this service (created by the caller).
    func other(_ tenant: String) -> TokenServiceHarness {
        TokenServiceHarness(
            tenant: tenant, origin: origin, settings: settings, database: database, databaseName: databaseName)
    }

    /// A database of these tests' own (`<test database>_tokensvc`, recreated once per test process), so the
    /// outbox rows they write are never claimed by another suite's relay (e.g. one pointed at unreachable
    /// Kafka, which would hold them until its message timeout).
    actor OwnDatabase {
        static let shared = OwnDatabase()
        /// One creation for all callers: the actor is reentrant across the awaits, so the task is what is shared.
        private var creation: Task<String, any Error>?

        func name() async throws -> String {
            if let creation { return try await creation.value }
            let task = Task { try await Self.create() }
            creation = task
            return try await task.value
        }

        private static func create() async throws -> String {
            let owner = try TestEnvironment.migrationDatabase()
            let name = owner.database + "_tokensvc"
            try await withPostgresClient(owner) { client in
                try await client.query(
                    PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"),
                    logger: TestEnvironment.logger)
                try await client.query(
                    PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: TestEnvironment.logger)
            }
            var own = owner
            own.database = name
            try await TestDatabase.migrate(own)
            return name
        }
    }

    // MARK: SQL helpers (what the gateway and the authorize pages create in production)

    /// Inserts a client; returns its secret when `authMethod` uses one.
    @discardableResult
    func insertClient(
        _ clientID: String, tenant: String? = nil, authMethod: TokenEndpointAuthMethod = .clientSecretBasic,
        grantTypes: [GrantType] = [.clientCredentials], scope: String = "openid profile",
        redirectURIs: [String] = ["com.example.app:/cb"], isStatic: Bool? = nil, dpopBound: Bool? = nil,
        applicationType: ApplicationType = .native, status: ClientStatus = .active, jwks: JWKSet? = nil,
        jwksURI: String? = nil, firstParty: Bool = false, authenticatedUser: UUID? = nil
    ) async throws -> String? {
        let metadata = ClientMetadata(
            redirectURIs: redirectURIs, tokenEndpointAuthMethod: authMethod, grantTypes: grantTypes, scope: scope,
            jwksURI: jwksURI, jwks: try jwks.map { try JSONValue(encoding: $0) }, applicationType: applicationType,
            dpopBoundAccessTokens: dpopBound)
        let json = String(decoding: try LatchkeyJSON.encode(metadata), as: UTF8.self)
        let secret = authMethod.usesClientSecret ? SecretTokens.generate() : nil
        let hash = secret.map(settings.secretHasher.hash)
        let tenant = tenant ?? self.tenant
        // client_credentials clients are admin-made static clients; the policy's grant list binds dynamic ones.
        let isStatic = isStatic ?? grantTypes.contains(.clientCredentials)
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO clients (tenant_id, client_id, status, client_kind, client_type, application_type,
                                     registration_mechanism, metadata, client_secret_hash, first_party, authenticated_user)
                VALUES (\(tenant), \(clientID), \(status.rawValue), \(isStatic ? "static" : "dynamic"),
                        \(authMethod.clientType.rawValue), \(applicationType.rawValue),
                        \(isStatic ? "admin" : "user_token"), \(json)::jsonb, \(hash), \(firstParty), \(authenticatedUser))
                """, logger: database.logger)
        }
        return secret
    }

    func setClientStatus(_ clientID: String, _ status: ClientStatus) async throws {
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "UPDATE clients SET status = \(status.rawValue) WHERE client_id = \(clientID)", logger: database.logger)
        }
    }

    func insertUser(username: String = "alice", tenant: String? = nil) async throws -> UUID {
        let id = UUID()
        let tenant = tenant ?? self.tenant
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "INSERT INTO users (tenant_id, user_id, username, email) VALUES (\(tenant), \(id), \(username), \(username + "@example.test"))",
                logger: database.logger)
        }
        return id
    }

    /// Inserts an authorization code as the authorize endpoint would; returns the code value.
    func insertCode(
        clientID: String, userID: UUID, redirectURI: String = "com.example.app:/cb", scope: String = "openid profile",
        verifier: String? = PKCE.generateVerifier(), method: String = "S256", nonce: String? = nil,
        dpopJKT: String? = nil, expiresIn: Int = 60, sealed: Bool = true
    ) async throws -> String {
        let challenge = verifier.map { method == "S256" ? PKCE.s256Challenge(for: $0) : $0 }
        let expires = Date.wholeSeconds(fromNow: expiresIn)
        // As the authorization endpoint issues them; `sealed: false` makes a code of random bits, whose
        // redemption reads the row.
        let contents = AuthorizationCodeContents(
            userID: userID, scope: scope, challenge: challenge, challengeMethod: challenge == nil ? nil : method,
            nonce: nonce, dpopJKT: dpopJKT, authTime: Date(), expiresAt: expires)
        let code =
            sealed
            ? try #require(
                AuthorizationCodeSealer(hasher: settings.secretHasher).seal(
                    contents, tenant: tenant, clientID: clientID, redirectURI: redirectURI))
            : SecretTokens.generate()
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO authorization_codes (tenant_id, code_hash, client_id, user_id, redirect_uri, scope,
                    code_challenge, code_challenge_method, nonce, dpop_jkt, auth_time, expires_at)
                VALUES (\(tenant), \(settings.secretHasher.hash(code)), \(clientID), \(userID), \(redirectURI), \(scope),
                        \(challenge), \(challenge == nil ? nil : method), \(nonce), \(dpopJKT), now(), \(expires))
                """, logger: database.logger)
        }
        return code
    }

    /// Outbox payloads of this tenant with the given CloudEvents type (read with the relay's role).
    func outboxPayloads(type: LatchkeyEventType) async throws -> [String] {
        var configuration = try TestEnvironment.systemDatabase()
        configuration.database = databaseName
        return try await withPostgresClient(configuration) { client in
            let system = Database(client: client, logger: TestEnvironment.logger)
            let rows = try await system.client.query(
                "SELECT payload FROM outbox WHERE tenant_id = \(tenant) AND event_type = \(type.cloudEventType) ORDER BY seq",
                logger: system.logger)
            var payloads: [String] = []
            for try await payload in rows.decode(String.self) { payloads.append(payload) }
            return payloads
        }
    }

    /// The tenant's JWKS as served.
    func jwks(_ client: any TestClientProtocol) async throws -> JWKSet {
        try await client.execute(uri: "/t/\(tenant)/jwks", method: .get) { response in
            #expect(response.status == .ok)
            return try JSONDecoder().decode(JWKSet.self, from: Data(response.body.readableBytesView))
        }
    }

    /// Verifies an access token the way a resource would.
    func verifyAccessToken(_ token: String, client: any TestClientProtocol, audience: String? = nil) async throws
        -> AccessTokenClaims
    {
        let parsed = try AccessTokenVerifier.parse(token)
        guard parsed.claims.iss == issuer else { throw AccessTokenError.untrustedIssuer }
        return try AccessTokenVerifier.check(parsed, keys: try await jwks(client).keys) {
            $0.contains(audience ?? issuer)
        }
    }
}

/// Form bodies and token requests for tests.
enum TokenRequest {
    static func form(_ pairs: [(String, String)]) -> ByteBuffer {
        ByteBuffer(string: PageBrowser.form(pairs))
    }

    static func basic(_ clientID: String, _ secret: String) -> String {
        "Basic " + Data("\(clientID):\(secret)".utf8).base64EncodedString()
    }

    static func headers(basic: (String, String)? = nil, dpop: String? = nil) -> HTTPFields {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let basic { headers[.authorization] = Self.basic(basic.0, basic.1) }
        if let dpop { headers[HTTPField.Name("DPoP")!] = dpop }
        return headers
    }

    /// The decoded JSON body of a response.
    static func json(_ response: TestResponse) -> [String: Any] { TestJSON.object(response.body.readableBytesView) }
}
