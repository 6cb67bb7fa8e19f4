import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// What an instance of a template keeps besides its metadata: the members it set itself and the
/// template version the metadata was built from.
struct TemplateLink: Sendable {
    var overrides: ClientMetadata
    var version: Int
}

/// A stored client row as the gateway needs it, with the hash of its registration access token.
struct StoredClient: Sendable {
    var record: ClientRecord
    var registrationTokenHash: String?
    var clientSecretHash: String?
    /// `dynamic` for clients registered through RFC 7591, `static` for clients an administrator created.
    var kind: String = "dynamic"
    /// Set by an administrator only (``AdminController``): the tenant's own app, no consent page.
    var firstParty: Bool = false
    /// The secret a rotation replaced, and until when it still authenticates.
    var previousSecretHash: String? = nil
    var previousSecretExpiresAt: Date? = nil

    /// Whether `secret` is the current secret, or the rotated-out one within its overlap.
    func acceptsSecret(_ secret: String, hasher: KeyedHasher, at now: Date) -> Bool {
        let current = clientSecretHash.map { hasher.matches(secret, storedHash: $0) } ?? false
        var previous = false
        if let hash = previousSecretHash, let until = previousSecretExpiresAt, until > now {
            previous = hasher.matches(secret, storedHash: hash)
        }
        return current || previous
    }
}

/// SQL for `clients` (and the rows that die with a client); every call runs inside the caller's
/// tenant-scoped transaction so the state change and its outbox row commit together.
enum ClientRepository {
    /// Inserts a new client with the hashes of its secret and registration access token; an
    /// instance of a template also stores the members it set itself and the template version. `instanceJKT`
    /// is the thumbprint of the key the registering app instance proved.
    static func insert(
        _ record: ClientRecord, secretHash: String?, registrationTokenHash: String?, kind: String = "dynamic",
        template: TemplateLink? = nil, firstParty: Bool = false, instanceJKT: String? = nil,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let metadata = String(decoding: try LatchkeyJSON.encode(record.metadata), as: UTF8.self)
        let overrides = try template.map { String(decoding: try LatchkeyJSON.encode($0.overrides), as: UTF8.self) }
        try await connection.query(
            """
            INSERT INTO clients (tenant_id, client_id, status, client_kind, client_type, application_type,
                                 authenticated_user, software_id, registration_mechanism, metadata,
                                 client_secret_hash, client_secret_expires_at, registration_token_hash,
                                 created_at, updated_at, template_overrides, template_version, first_party,
                                 instance_jkt)
            VALUES (\(record.tenant.rawValue), \(record.clientID), \(record.status.rawValue), \(kind),
                    \(record.clientType.rawValue), \(record.applicationType.rawValue), \(record.authenticatedUser),
                    \(record.templateID), \(record.registrationMechanism.rawValue), \(metadata)::jsonb,
                    \(secretHash), \(record.secretExpiresAt), \(registrationTokenHash),
                    \(record.createdAt), \(record.updatedAt), \(overrides)::jsonb, \(template?.version), \(firstParty),
                    \(instanceJKT))
            """, logger: logger)
    }

    /// Locks the user's row (serialising that user's registrations) and counts their active clients;
    /// nil when the tenant has no active user with this id.
    static func lockUserAndCountActiveClients(
        _ user: UUID, tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int? {
        let users = try await connection.query(
            "SELECT status FROM users WHERE tenant_id = \(tenant) AND user_id = \(user) FOR UPDATE", logger: logger)
        var found = false
        for try await status in users.decode(String.self) { found = status == "active" }
        guard found else { return nil }
        let rows = try await connection.query(
            """
            SELECT count(*)::int FROM clients
            WHERE tenant_id = \(tenant) AND authenticated_user = \(user) AND status = 'active'
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// The active dynamic client `user` registered from the app instance holding the key `jkt`, locked.
    static func lockInstance(
        user: UUID, jkt: String, tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> String? {
        let rows = try await connection.query(
            """
            SELECT client_id FROM clients
            WHERE tenant_id = \(tenant) AND authenticated_user = \(user) AND instance_jkt = \(jkt)
              AND status = 'active' AND client_kind = 'dynamic'
            ORDER BY created_at DESC LIMIT 1 FOR UPDATE
            """, logger: logger)
        for try await clientID in rows.decode(String.self) { return clientID }
        return nil
    }

    /// The active dynamic client of `user` used least recently (never used counts from its creation): the one
    /// to expire when the user is at `max_clients_per_user`, which is an instance whose app lost its key.
    static func leastRecentlyUsedClient(
        of user: UUID, tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> String? {
        let rows = try await connection.query(
            """
            SELECT client_id FROM clients
            WHERE tenant_id = \(tenant) AND authenticated_user = \(user) AND status = 'active'
              AND client_kind = 'dynamic'
            ORDER BY COALESCE(last_used_at, created_at), created_at LIMIT 1 FOR UPDATE
            """, logger: logger)
        for try await clientID in rows.decode(String.self) { return clientID }
        return nil
    }

    /// Installs a new secret; the current one stays valid as the previous secret until `previousUntil` (nil:
    /// it stops working now).
    static func rotateSecret(
        _ clientID: String, tenant: String, secretHash: String, secretExpiresAt: Date?, previousUntil: Date?,
        at time: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE clients SET previous_client_secret_hash = CASE WHEN \(previousUntil)::timestamptz IS NULL THEN NULL
                                                                 ELSE client_secret_hash END,
                   previous_client_secret_expires_at = \(previousUntil),
                   client_secret_hash = \(secretHash), client_secret_expires_at = \(secretExpiresAt), updated_at = \(time)
            WHERE tenant_id = \(tenant) AND client_id = \(clientID)
            """, logger: logger)
    }

    /// Replaces the secret hash (nil keeps none) and registration token hash of a client: the old ones stop
    /// working when this commits.
    static func replaceCredentials(
        _ clientID: String, tenant: String, secretHash: String?, secretExpiresAt: Date?, registrationTokenHash: String,
        at time: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE clients SET client_secret_hash = \(secretHash), client_secret_expires_at = \(secretExpiresAt),
                   previous_client_secret_hash = NULL, previous_client_secret_expires_at = NULL,
                   registration_token_hash = \(registrationTokenHash), updated_at = \(time)
            WHERE tenant_id = \(tenant) AND client_id = \(clientID)
            """, logger: logger)
    }

    /// The client, locked for update when `forUpdate`; nil when this tenant has no such client.
    static func find(
        _ clientID: String, tenant: String, forUpdate: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> StoredClient? {
        let lock = forUpdate ? " FOR UPDATE" : ""
        var query: PostgresQuery = """
            SELECT client_id, status, client_type, application_type, authenticated_user, software_id,
                   registration_mechanism, metadata::text, client_secret_expires_at, created_at, updated_at,
                   last_used_at, registration_token_hash, client_secret_hash, client_kind, first_party,
                   previous_client_secret_hash, previous_client_secret_expires_at
            FROM clients WHERE tenant_id = \(tenant) AND client_id = \(clientID)
            """
        query.sql += lock
        let rows = try await connection.query(query, logger: logger)
        typealias Row = (
            String, String, String, String, UUID?, String?, String, String, Date?, Date, Date, Date?, String?, String?,
            String, Bool, String?, Date?
        )
        for try await row in rows.decode(Row.self) {
            let metadata = try LatchkeyJSON.decode(ClientMetadata.self, from: Data(row.7.utf8))
            guard let slug = TenantSlug(rawValue: tenant), let status = ClientStatus(rawValue: row.1),
                let clientType = ClientType(rawValue: row.2), let applicationType = ApplicationType(rawValue: row.3),
                let mechanism = RegistrationMechanism(rawValue: row.6)
            else { throw StoredClientCorrupt(clientID: clientID) }
            let record = ClientRecord(
                clientID: row.0, tenant: slug, status: status, clientType: clientType, applicationType: applicationType,
                authenticatedUser: row.4, templateID: row.5, metadata: metadata, secretExpiresAt: row.8,
                createdAt: row.9, updatedAt: row.10, lastUsedAt: row.11, registrationMechanism: mechanism)
            return StoredClient(
                record: record, registrationTokenHash: row.12, clientSecretHash: row.13, kind: row.14,
                firstParty: row.15, previousSecretHash: row.16, previousSecretExpiresAt: row.17)
        }
        return nil
    }

    /// Replaces the metadata (and derived columns) of a client; a new registration token hash when rotated.
    static func updateMetadata(
        _ record: ClientRecord, registrationTokenHash: String?, template: TemplateLink? = nil,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let metadata = String(decoding: try LatchkeyJSON.encode(record.metadata), as: UTF8.self)
        let overrides = try template.map { String(decoding: try LatchkeyJSON.encode($0.overrides), as: UTF8.self) }
        try await connection.query(
            """
            UPDATE clients SET metadata = \(metadata)::jsonb, client_type = \(record.clientType.rawValue),
                   application_type = \(record.applicationType.rawValue), updated_at = \(record.updatedAt),
                   registration_token_hash = COALESCE(\(registrationTokenHash), registration_token_hash),
                   template_overrides = \(overrides)::jsonb, template_version = \(template?.version)
            WHERE tenant_id = \(record.tenant.rawValue) AND client_id = \(record.clientID)
            """, logger: logger)
    }

    /// Moves a client out of `active` and revokes its live refresh tokens, in the caller's transaction.
    static func revoke(
        _ clientID: String, tenant: String, status: ClientStatus, reason: String, at time: Date,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE clients SET status = \(status.rawValue), revoked_at = \(time), revocation_reason = \(reason),
                   updated_at = \(time), registration_token_hash = NULL
            WHERE tenant_id = \(tenant) AND client_id = \(clientID)
            """, logger: logger)
        try await connection.query(
            """
            UPDATE refresh_tokens SET status = 'revoked', revoked_at = \(time), revoke_reason = \(reason)
            WHERE tenant_id = \(tenant) AND client_id = \(clientID) AND status IN ('active', 'rotated')
            """, logger: logger)
    }

    /// For `ClientRevoked`: the latest moment an access token of `client` can still be valid. That is the last
    /// expiry on record, or later a token being signed right now (its grant read the client as active before this
    /// transaction commits) with the tenant's access-token lifetime (its DCR-token lifetime too for a client that
    /// may obtain `dcr`). A policy that does not decode counts as the longest lifetime a policy may set.
    static func accessTokensExpireAt(
        _ client: ClientRecord, revokedAt time: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Date {
        let tenant = client.tenant.rawValue
        let clientID = client.clientID
        let mayHoldDCRTokens = TenantPolicy.scopeTokens(client.metadata.scope ?? "").contains("dcr")
        let rows = try await connection.query(
            """
            SELECT (SELECT max(expires_at) FROM issued_access_tokens WHERE tenant_id = \(tenant) AND client_id = \(clientID)),
                   (SELECT policy::text FROM tenants WHERE tenant_id = \(tenant))
            """, logger: logger)
        var recorded: Date?
        var lifetime = TenantPolicy.maximumDurationSeconds
        for try await (last, json) in rows.decode((Date?, String?).self) {
            recorded = last
            if let json, let policy = try? LatchkeyJSON.makeDecoder().decode(TenantPolicy.self, from: Data(json.utf8)) {
                lifetime = policy.tokenLifetimes.accessToken
                if mayHoldDCRTokens { lifetime = max(lifetime, policy.tokenLifetimes.dcrAccessToken) }
            }
        }
        let signedNow = time.addingTimeInterval(TimeInterval(Int64(lifetime) + ClientRevoked.issuanceSlackSeconds))
        return max(recorded ?? signedNow, signedNow)
    }
}

/// A client row whose stored enums no longer decode: a bug or a manual edit, answered as a 500.
struct StoredClientCorrupt: Error, CustomStringConvertible {
    let clientID: String
    var description: String { "stored client \(clientID) has an unreadable row" }
}
