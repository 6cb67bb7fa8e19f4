import Foundation
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
        tenant: String, algorithm: JWSAlgorithm = .es256, status: SigningKeyStatus,
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
            INSERT INTO signing_keys (tenant_id, kid, algorithm, public_jwk, encrypted_private_key, status, activated_at)
            VALUES (\(tenant), \(kid), \(algorithm.rawValue), \(jwkJSON)::jsonb, \(ByteBuffer(bytes: sealed)),
                    \(status.rawValue), CASE WHEN \(status.rawValue) = 'active' THEN now() END)
            """, logger: logger)
        return PublishedSigningKey(kid: kid, status: status, jwk: jwk)
    }

    /// Publishes a new key that does not sign yet (rotation step 1); replaces an earlier staged key.
    @discardableResult
    public func stageNextKey(
        tenant: String, algorithm: JWSAlgorithm = .es256, on connection: PostgresConnection, logger: Logger
    ) async throws -> PublishedSigningKey {
        try await connection.query(
            "DELETE FROM signing_keys WHERE tenant_id = \(tenant) AND status = 'next'", logger: logger)
        return try await createKey(tenant: tenant, algorithm: algorithm, status: .next, on: connection, logger: logger)
    }

    /// Makes the staged key the signer (rotation step 2); the old signer stays published for `retiredFor`.
    /// Returns false when no key is staged.
    public func activateNextKey(
        tenant: String, retiredFor: Duration, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let seconds = Double(retiredFor.components.seconds)
        try await connection.query(
            """
            UPDATE signing_keys SET status = 'retired', retired_at = now(),
                   publish_until = now() + make_interval(secs => \(seconds))
            WHERE tenant_id = \(tenant) AND status = 'active'
              AND EXISTS (SELECT 1 FROM signing_keys WHERE tenant_id = \(tenant) AND status = 'next')
            """, logger: logger)
        let rows = try await connection.query(
            """
            UPDATE signing_keys SET status = 'active', activated_at = now()
            WHERE tenant_id = \(tenant) AND status = 'next' RETURNING kid
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
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
            keys.append(PublishedSigningKey(
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
            guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
                throw JOSEError.unsupportedAlgorithm("stored key \(kid) has unknown algorithm \(algorithmName)")
            }
            let der = try envelope.open(
                Data(sealed.readableBytesView), associatedData: KeyEnvelope.associatedData(tenant: tenant, kid: kid))
            return (kid, try SigningKey(algorithm: algorithm, pkcs8DER: der))
        }
        return nil
    }
}
