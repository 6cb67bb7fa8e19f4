import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// A tenant's key as published in its JWKS.
public struct PublishedSigningKey: Sendable, Equatable {
    public let kid: String
    public let status: SigningKeyStatus
    public let jwk: JWK
}

/// Lifecycle of a signing key: published before it signs (`next`), signing (`active`), published only (`retired`).
public enum SigningKeyStatus: String, Sendable, Codable {
    case next, active, retired
}

/// Per-tenant signing keys in PostgreSQL, private halves sealed under the key-encryption key.
///
/// Rotation without downtime: ``stageNextKey`` publishes a new key in the JWKS before it signs anything;
/// ``activateNextKey`` makes it the signer and retires the old one, which stays published until the
/// longest-lived token it signed has expired.
public struct TenantSigningKeys: Sendable {
    public let envelope: KeyEnvelope

    public init(envelope: KeyEnvelope) {
        self.envelope = envelope
    }

    /// Generates and stores a key for `tenant`; the caller's connection must be scoped to that tenant.
    @discardableResult
    public func createKey(
        tenant: String, algorithm: JWSAlgorithm = .es256, status: SigningKeyStatus, stagedBy: String? = nil,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> PublishedSigningKey {
        let key = try SigningKey.generate(algorithm)
        let kid = SecretTokens.generate(byteCount: 32).prefix(22).description
        let jwk = key.publicJWK(kid: kid)
        let sealed = try envelope.seal(
            key.pkcs8DERRepresentation, associatedData: KeyEnvelope.associatedData(tenant: tenant, kid: kid))
        let jwkJSON = String(decoding: try LatchkeyJSON.encode(jwk), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO signing_keys (tenant_id, kid, algorithm, public_jwk, encrypted_private_key, status, activated_at, staged_by)
            VALUES (\(tenant), \(kid), \(algorithm.rawValue), \(jwkJSON)::jsonb, \(ByteBuffer(bytes: sealed)),
                    \(status.rawValue), CASE WHEN \(status.rawValue) = 'active' THEN now() END, \(stagedBy))
            """, logger: logger)
        return PublishedSigningKey(kid: kid, status: status, jwk: jwk)
    }

    /// Serialises key changes of one tenant (rotations, activations, the first key) across replicas
    /// until the caller's transaction ends.
    public func lockKeys(tenant: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtext('latchkey.signing_keys'), hashtext(\(tenant)))", logger: logger)
    }

    /// Publishes a new key that does not sign yet (rotation step 1). A tenant has at most one staged key:
    /// when one exists this throws ``SigningKeyRotationError/alreadyStaged(kid:)`` and changes nothing.
    @discardableResult
    public func stageNextKey(
        tenant: String, algorithm: JWSAlgorithm = .es256, stagedBy: String? = nil, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> PublishedSigningKey {
        try await lockKeys(tenant: tenant, on: connection, logger: logger)
        if let staged = try await listKeys(tenant: tenant, on: connection, logger: logger).first(where: {
            $0.status == .next
        }) {
            throw SigningKeyRotationError.alreadyStaged(kid: staged.kid)
        }
        return try await createKey(
            tenant: tenant, algorithm: algorithm, status: .next, stagedBy: stagedBy, on: connection, logger: logger)
    }

    /// Makes the staged key the signer (rotation step 2) once it has been published for at least
    /// `publishedFor`; the old signer stays published for `retiredFor`. Returns the activated kid,
    /// nil when no key is staged or it has not been published long enough.
    @discardableResult
    public func activateNextKey(
        tenant: String, retiredFor: Duration, publishedFor: Duration = .zero, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> String? {
        try await lockKeys(tenant: tenant, on: connection, logger: logger)
        let published = Double(publishedFor.components.seconds)
        let due = try await connection.query(
            """
            SELECT kid FROM signing_keys
            WHERE tenant_id = \(tenant) AND status = 'next' AND created_at <= now() - make_interval(secs => \(published))
            """, logger: logger)
        var staged: String?
        for try await kid in due.decode(String.self) { staged = kid }
        guard let staged else { return nil }
        let seconds = Double(retiredFor.components.seconds)
        try await connection.query(
            """
            UPDATE signing_keys SET status = 'retired', retired_at = now(),
                   publish_until = now() + make_interval(secs => \(seconds))
            WHERE tenant_id = \(tenant) AND status = 'active'
            """, logger: logger)
        try await connection.query(
            """
            UPDATE signing_keys SET status = 'active', activated_at = now()
            WHERE tenant_id = \(tenant) AND kid = \(staged)
            """, logger: logger)
        return staged
    }

    /// Deletes retired keys whose publication has ended (no token they signed is still valid), private
    /// halves with them. Returns their kids.
    @discardableResult
    public func deleteExpiredKeys(tenant: String, on connection: PostgresConnection, logger: Logger) async throws
        -> [String]
    {
        let rows = try await connection.query(
            """
            DELETE FROM signing_keys WHERE tenant_id = \(tenant) AND status = 'retired' AND publish_until <= now()
            RETURNING kid
            """, logger: logger)
        var kids: [String] = []
        for try await kid in rows.decode(String.self) { kids.append(kid) }
        return kids
    }

    /// Every stored key of the tenant with its lifecycle dates (public facts only), signer first.
    public func listKeys(tenant: String, on connection: PostgresConnection, logger: Logger) async throws
        -> [SigningKeyRecord]
    {
        let rows = try await connection.query(
            """
            SELECT kid, algorithm, status, created_at, activated_at, retired_at, publish_until, staged_by FROM signing_keys
            WHERE tenant_id = \(tenant)
            ORDER BY CASE status WHEN 'active' THEN 0 WHEN 'next' THEN 1 ELSE 2 END, created_at DESC
            """, logger: logger)
        var keys: [SigningKeyRecord] = []
        typealias Row = (String, String, String, Date, Date?, Date?, Date?, String?)
        for try await row in rows.decode(Row.self) {
            keys.append(
                SigningKeyRecord(
                    kid: row.0, algorithm: row.1, status: SigningKeyStatus(rawValue: row.2) ?? .retired,
                    createdAt: row.3,
                    activatedAt: row.4, retiredAt: row.5, publishUntil: row.6, stagedBy: row.7))
        }
        return keys
    }

    /// Every key the tenant's JWKS must publish: staged, active, and retired ones still in their grace period.
    public func publishedKeys(
        tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> [PublishedSigningKey] {
        let rows = try await connection.query(
            """
            SELECT kid, status, public_jwk::text FROM signing_keys
            WHERE tenant_id = \(tenant)
              AND (status IN ('next', 'active') OR (status = 'retired' AND publish_until > now()))
            ORDER BY CASE status WHEN 'active' THEN 0 WHEN 'next' THEN 1 ELSE 2 END, created_at DESC
            """, logger: logger)
        var keys: [PublishedSigningKey] = []
        for try await (kid, status, json) in rows.decode((String, String, String).self) {
            keys.append(
                PublishedSigningKey(
                    kid: kid, status: SigningKeyStatus(rawValue: status) ?? .retired,
                    jwk: try LatchkeyJSON.makeDecoder().decode(JWK.self, from: Data(json.utf8))))
        }
        return keys
    }

    /// The key that signs now, unsealed; nil when the tenant has none.
    public func activeKey(
        tenant: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> (kid: String, key: SigningKey)? {
        let rows = try await connection.query(
            """
            SELECT kid, algorithm, encrypted_private_key FROM signing_keys
            WHERE tenant_id = \(tenant) AND status = 'active'
            """, logger: logger)
        for try await (kid, algorithmName, sealed) in rows.decode((String, String, ByteBuffer).self) {
            return (kid, try unseal(tenant: tenant, kid: kid, algorithm: algorithmName, sealed: sealed, logger: logger))
        }
        return nil
    }

    /// The active key in one statement of its own (no transaction around it); `unsealed` answers for a key
    /// already opened (by kid), so only a key not seen before is decrypted and parsed.
    public func activeKey(
        tenant: String, database: Database, unsealed: (String) -> SigningKey? = { _ in nil }
    ) async throws -> (kid: String, key: SigningKey)? {
        let rows = try await database.client.query(
            "SELECT kid, algorithm, encrypted_private_key FROM active_signing_key(\(tenant))",
            logger: database.logger)
        for try await (kid, algorithmName, sealed) in rows.decode((String, String, ByteBuffer).self) {
            if let key = unsealed(kid) { return (kid, key) }
            return (
                kid,
                try unseal(tenant: tenant, kid: kid, algorithm: algorithmName, sealed: sealed, logger: database.logger)
            )
        }
        return nil
    }

    private func unseal(
        tenant: String, kid: String, algorithm algorithmName: String, sealed: ByteBuffer, logger: Logger
    ) throws -> SigningKey {
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            throw JOSEError.unsupportedAlgorithm("stored key \(kid) has unknown algorithm \(algorithmName)")
        }
        let der: Data
        do {
            der = try envelope.open(
                Data(sealed.readableBytesView), associatedData: KeyEnvelope.associatedData(tenant: tenant, kid: kid))
        } catch {
            // Almost always configuration: a replica (or the job that created the key) with another
            // KEY_ENCRYPTION_KEY. Said here, as the token endpoint can only answer server_error.
            logger.error(
                "the active signing key cannot be opened with this process's key-encryption keys",
                metadata: [
                    "tenant": "\(tenant)", "kid": "\(kid)", "reason": "\(error)",
                    "hint":
                        "every replica needs the same KEY_ENCRYPTION_KEY (and KEY_ENCRYPTION_KEY_PREVIOUS during a KEK rotation)",
                ])
            throw error
        }
        return try SigningKey(algorithm: algorithm, pkcs8DER: der)
    }
}
