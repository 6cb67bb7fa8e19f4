import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO

/// Seeds the benchmark tenant straight into the scratch database, as the admin API and sign-up would:
/// a confidential static client (client_credentials), a public DPoP-bound native app (code flow) and a
/// password user.
struct Seeder {
    static let tenant = "bench"
    static let serviceClient = "bench-service"
    static let nativeApp = "bench-app"
    static let redirectURI = "com.example.bench:/cb"
    static let username = "bench-user"
    static let password = "correct horse battery staple 42"

    let database: Database
    let hasher: KeyedHasher

    /// Creates everything and returns the service client's secret.
    func seed() async throws -> String {
        let secret = SecretTokens.generate(prefix: "lk_cs_")
        // Codes live long enough to pre-generate a whole phase's worth before redeeming them.
        let policy =
            #"{"token_lifetimes":{"authorization_code":600,"access_token":600},"allowed_scopes":["openid","profile","api"]}"#
        let service = ClientMetadata(
            tokenEndpointAuthMethod: .clientSecretBasic, grantTypes: [.clientCredentials], scope: "api",
            applicationType: .web)
        let app = ClientMetadata(
            redirectURIs: [Self.redirectURI], tokenEndpointAuthMethod: .noAuthentication,
            grantTypes: [.authorizationCode, .refreshToken], scope: "openid profile", applicationType: .native,
            dpopBoundAccessTokens: true)
        let passwordHash = try PasswordHasher().hash(Self.password)
        let tenant = Self.tenant
        let user = UUID()
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "INSERT INTO tenants (tenant_id, display_name, policy) VALUES (\(tenant), 'Benchmark', \(policy)::jsonb)",
                logger: database.logger)
            // The app instance was registered by the user's DCR token, so signing in on it asks no consent.
            try await connection.query(
                """
                INSERT INTO users (tenant_id, user_id, username, email, password_hash)
                VALUES (\(tenant), \(user), \(Self.username), 'bench@example.test', \(passwordHash))
                """, logger: database.logger)
            try await insert(
                Self.serviceClient, metadata: service, kind: "static", type: "confidential", application: "web",
                mechanism: "admin", secretHash: hasher.hash(secret), on: connection)
            try await insert(
                Self.nativeApp, metadata: app, kind: "dynamic", type: "public", application: "native",
                mechanism: "user_token", secretHash: nil, registeredBy: user, on: connection)
        }
        return secret
    }

    private func insert(
        _ clientID: String, metadata: ClientMetadata, kind: String, type: String, application: String,
        mechanism: String,
        secretHash: String?, registeredBy user: UUID? = nil, on connection: PostgresConnection
    ) async throws {
        let json = String(decoding: try LatchkeyJSON.encode(metadata), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO clients (tenant_id, client_id, status, client_kind, client_type, application_type,
                                 registration_mechanism, metadata, client_secret_hash, authenticated_user)
            VALUES (\(Self.tenant), \(clientID), 'active', \(kind), \(type), \(application), \(mechanism),
                    \(json)::jsonb, \(secretHash), \(user))
            """, logger: database.logger)
    }
}
