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
import NIOCore
import PostgresNIO
import Synchronization
import Testing

@testable import RegistrationGateway

/// A tenant with a signing key and a user, the gateway app over real Postgres, and DCR token minting.
struct GatewayHarness {
    static let publicURL = "https://register.latchkey.test"
    static let tokenServiceURL = "https://login.latchkey.test"
    /// `SECRET_HASH_KEY` of the apps (and token-service processes) of this test run.
    static let secretHashKey = KeyMaterial.generateConfigurationValue()
    static let hasher = try! KeyedHasher(configuration: secretHashKey)
    static let signingKeys = TenantSigningKeys(
        envelope: try! KeyEnvelope(configuration: TestEnvironment.keyEncryptionKey))

    let tenant: String
    let user: UUID

    static let bootstrapKey = "bootstrap-" + String(repeating: "k", count: 40)

    /// With `keyRotation`, the gateway seals staged keys with the envelope of ``signingKeys``.
    static func gatewaySettings(keyRotation: Bool = false, platformTenant: String? = nil) throws -> GatewaySettings {
        var settings = try GatewaySettings(
            publicURL: publicURL, tokenServicePublicURL: tokenServiceURL, secretHasher: hasher,
            adminBootstrapKey: bootstrapKey,
            platformTenant: platformTenant.flatMap(TenantSlug.init(rawValue:)))
        if keyRotation { settings.keyEnvelope = signingKeys.envelope }
        return settings
    }

    /// Creates a fresh tenant with `policy`, an active signing key of `algorithm` and one active user.
    static func make(policy: String = "{}", algorithm: JWSAlgorithm = .es256) async throws -> GatewayHarness {
        let tenant = TestEnvironment.uniqueTenant("gw")
        let user = UUID()
        try await TestDatabase.withApp { database in
            try await TestDatabase.createTenant(tenant, in: database, policy: policy)
            try await database.withTenantTransaction(tenant) { connection in
                try await signingKeys.createKey(
                    tenant: tenant, algorithm: algorithm, status: .active, on: connection, logger: database.logger)
                try await connection.query(
                    "INSERT INTO users (tenant_id, user_id, username) VALUES (\(tenant), \(user), \("alice-\(user)"))",
                    logger: database.logger)
            }
        }
        return GatewayHarness(tenant: tenant, user: user)
    }

    /// Admin tokens are a client's own (client credentials: `sub` = `client_id`); DCR tokens come from the
    /// tenant's DCR client on behalf of a user.
    static func clientID(subject: String?, scope: String) -> String {
        scope.split(separator: " ").contains("admin") ? (subject ?? "admin-client") : "mobile-dcr-client"
    }

    /// A DCR token of this tenant; every claim can be bent to test a refusal.
    func dcrToken(
        sub: String? = nil, scope: String = "dcr", audience: String? = nil, issuer: String? = nil,
        expiresIn: Int64 = 300, signingTenant: String? = nil, database configuration: DatabaseConfiguration? = nil,
        boundTo jkt: String? = nil
    ) async throws -> String {
        let signer = signingTenant ?? tenant
        let load: @Sendable (Database) async throws -> (kid: String, key: SigningKey)? = { database in
            try await database.withTenantTransaction(signer) { connection in
                try await Self.signingKeys.activeKey(tenant: signer, on: connection, logger: database.logger)
            }
        }
        let found: (kid: String, key: SigningKey)?
        if let configuration {
            found = try await withPostgresClient(configuration) {
                try await load(Database(client: $0, logger: TestEnvironment.logger))
            }
        } else {
            found = try await TestDatabase.withApp(load)
        }
        let active = try #require(found, "tenant \(signer) has no active key")
        let now = Int64(Date().timeIntervalSince1970)
        let claims = AccessTokenClaims(
            iss: issuer ?? "\(Self.tokenServiceURL)/t/\(tenant)", sub: sub ?? user.uuidString,
            aud: Audience(audience ?? "\(Self.publicURL)/t/\(tenant)/register"),
            clientID: Self.clientID(subject: sub, scope: scope),
            scope: scope, jti: UUID().uuidString, iat: now, exp: now + expiresIn,
            cnf: jkt.map { AccessTokenClaims.Confirmation(jkt: $0) })
        return try CompactJWS.sign(
            claims: claims, using: active.key, header: JWSHeaderParameters(typ: "at+jwt", kid: active.kid))
    }

    /// One embedded cluster for every gateway app of this test process: the apps' outbox relays deliver
    /// their events there, so no relay holds a claimed row while it retries an unreachable broker.
    static let sharedCluster: EmbeddedKafkaCluster = {
        do { return try EmbeddedKafkaCluster(brokers: 1, logger: TestServiceSettings.logger) } catch {
            fatalError("the embedded Kafka cluster did not start: \(error)")
        }
    }()

    /// Runs `body` against the gateway app (router test client, the shared embedded cluster unless `kafka` is given).
    /// With `live`, over real HTTP on a loopback port instead of the router test client.
    static func withApp(
        kafka: String? = nil, fetchStatementJWKS: JWKSCache.Fetch? = nil, keyRotation: Bool = false,
        platformTenant: String? = nil, live: Bool = false,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let settings = try await TestServiceSettings.make(
            .registrationGateway, kafkaBrokers: kafka ?? sharedCluster.bootstrapServers)
        let app = try buildApplication(
            settings: settings, gateway: gatewaySettings(keyRotation: keyRotation, platformTenant: platformTenant),
            logger: TestServiceSettings.logger, fetchStatementJWKS: fetchStatementJWKS)
        try await app.journaledTest(live ? .live : .router, body)
    }

    /// Adds another active user to the tenant.
    func addUser() async throws -> UUID {
        let user = UUID()
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await connection.query(
                    "INSERT INTO users (tenant_id, user_id, username) VALUES (\(tenant), \(user), \("bob-\(user)"))",
                    logger: database.logger)
            }
        }
        return user
    }

    /// ``withApp(kafka:fetchStatementJWKS:keyRotation:platformTenant:live:_:)`` for a body that returns a value.
    static func withAppResult<T: Sendable>(
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> T
    ) async throws -> T {
        let result = Mutex<T?>(nil)
        try await withApp { client in
            let value = try await body(client)
            result.withLock { $0 = value }
        }
        return try #require(result.withLock { $0 })
    }

    /// Inserts a template client.
    func createTemplate(_ softwareID: String, metadata: String, overridable: [String]) async throws {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO client_templates (tenant_id, software_id, metadata, overridable_fields)
                    VALUES (\(tenant), \(softwareID), \(metadata)::jsonb, \(overridable))
                    """, logger: database.logger)
            }
        }
    }

    /// Mints an initial access token row and returns its plaintext.
    func createInitialAccessToken(uses: Int = 1, expiresIn: TimeInterval = 600, revoked: Bool = false) async throws
        -> String
    {
        let token = SecretTokens.generate(prefix: "lk_iat_")
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO initial_access_tokens (tenant_id, token_id, token_hash, remaining_uses, expires_at, created_by, revoked_at)
                    VALUES (\(tenant), \(UUID()), \(Self.hasher.hash(token)), \(uses), \(Date().addingTimeInterval(expiresIn)),
                            'test', \(revoked ? Date() : nil))
                    """, logger: database.logger)
            }
        }
        return token
    }

    /// Outbox payloads of `eventType` for this tenant, oldest first.
    func outboxPayloads(_ eventType: LatchkeyEventType) async throws -> [String] {
        try await TestDatabase.withSystem { database in
            let rows = try await database.client.query(
                "SELECT payload FROM outbox WHERE tenant_id = \(tenant) AND event_type = \(eventType.cloudEventType) ORDER BY seq",
                logger: database.logger)
            var payloads: [String] = []
            for try await payload in rows.decode(String.self) { payloads.append(payload) }
            return payloads
        }
    }
}

/// JSON request helpers for the router test client.
extension TestClientProtocol {
    func send(
        _ method: HTTPRequest.Method, _ uri: String, token: String? = nil, json: String? = nil,
        contentType: String = "application/json", forwardedFor: String? = nil, headers extra: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let forwardedFor { headers[HTTPField.Name("X-Forwarded-For")!] = forwardedFor }
        if json != nil { headers[.contentType] = contentType }
        return try await execute(
            uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }
        ) { $0 }
    }
}

extension TestResponse {
    var json: [String: Any] { TestJSON.object(body.readableBytesView) }
    var errorCode: String? { json["error"] as? String }
}
