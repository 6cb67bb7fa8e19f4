import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// A client as the token endpoint needs it, with the keyed hash of its secret (never the secret).
struct StoredClient: Sendable {
    let clientID: String
    let status: ClientStatus
    let isStatic: Bool
    let clientType: ClientType
    let applicationType: ApplicationType
    let metadata: ClientMetadata
    let secretHash: String?
    let secretExpiresAt: Date?
    /// The user whose DCR token registered this instance (nil for static and other registrations).
    var authenticatedUser: UUID? = nil
    /// Trusted by an administrator as the tenant's own app: signed-in users are not asked to consent.
    var firstParty: Bool = false
    /// The secret a rotation replaced, and until when it still authenticates (the overlap).
    var previousSecretHash: String? = nil
    var previousSecretExpiresAt: Date? = nil
    /// After authentication with a secret: the stored hash it matched (the current or the previous one).
    var authenticatedSecretHash: String? = nil
    /// The metadata as stored when the record was read, so a statement can tell the record is still current.
    var storedMetadata: String? = nil
    /// Authenticated against a cached record rather than one read for this request.
    var fromCache = false

    var authMethod: TokenEndpointAuthMethod { metadata.tokenEndpointAuthMethod ?? .clientSecretBasic }
    var grantTypes: [GrantType] { metadata.grantTypes ?? [.authorizationCode] }
    var registeredScopes: [String] { TenantPolicy.scopeTokens(metadata.scope ?? "") }
    /// The tenant's static DCR client: a static client registered with the reserved `dcr` scope.
    var isDCRClient: Bool { isStatic && registeredScopes.contains("dcr") }

    /// Whether `secret` is the client's current secret, or the rotated-out one within its overlap.
    func acceptsSecret(_ secret: String, hasher: KeyedHasher, at now: Date) -> Bool {
        matchingSecretHash(secret, hasher: hasher, at: now) != nil
    }

    /// The stored hash `secret` matches: the current secret's, or the rotated-out one's within its overlap.
    func matchingSecretHash(_ secret: String, hasher: KeyedHasher, at now: Date) -> String? {
        let current = secretHash.map { hasher.matches(secret, storedHash: $0) } ?? false
        var previous = false
        if let hash = previousSecretHash, let until = previousSecretExpiresAt, until > now {
            previous = hasher.matches(secret, storedHash: hash)
        }
        // Both compared every time, so timing does not tell which one matched.
        return current ? secretHash : previous ? previousSecretHash : nil
    }

    func isUsable(at now: Date) -> Bool {
        guard status == .active else { return false }
        if let secretExpiresAt, secretExpiresAt <= now { return false }
        return true
    }
}

/// Reads clients inside a tenant-scoped transaction (Row-Level Security confines it to the tenant).
enum ClientRepository {
    static func find(_ clientID: String, on connection: PostgresConnection, logger: Logger) async throws
        -> StoredClient?
    {
        let rows = try await connection.query(
            """
            SELECT client_id, status, client_kind, client_type, application_type, metadata::text,
                   client_secret_hash, client_secret_expires_at, authenticated_user, first_party,
                   previous_client_secret_hash, previous_client_secret_expires_at
            FROM clients WHERE client_id = \(clientID)
            """, logger: logger)
        typealias Row = (String, String, String, String, String, String, String?, Date?, UUID?, Bool, String?, Date?)
        for try await (id, status, kind, type, appType, metadataJSON, hash, expires, user, firstParty, old, oldUntil)
            in rows.decode(Row.self)
        {
            return StoredClient(
                clientID: id, status: ClientStatus(rawValue: status) ?? .revoked, isStatic: kind == "static",
                clientType: ClientType(rawValue: type) ?? .public,
                applicationType: ApplicationType(rawValue: appType) ?? .native,
                metadata: try LatchkeyJSON.makeDecoder().decode(ClientMetadata.self, from: Data(metadataJSON.utf8)),
                secretHash: hash, secretExpiresAt: expires, authenticatedUser: user, firstParty: firstParty,
                previousSecretHash: old, previousSecretExpiresAt: oldUntil, storedMetadata: metadataJSON)
        }
        return nil
    }

    /// Whether the client exists and is active now (introspection and resources re-check this on every call).
    static func isActive(_ clientID: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        try await find(clientID, on: connection, logger: logger)?.isUsable(at: Date()) ?? false
    }
}
