import Foundation
import LatchkeyCore
import LatchkeyPersistence
import PostgresNIO

/// Mints RFC 9068 access tokens for admin APIs in tests, with a signing key stored in
/// `signing_keys` the way the token service keeps its keys (public JWK; private part unused here).
public struct AdminTokenMinter: Sendable {
    public let tenant: String
    public let issuerBase: String
    public let kid: String
    public let key: SigningKey

    /// Generates a key for `tenant` and stores its public half as an `active` signing key.
    public static func make(
        tenant: String, issuerBase: String, algorithm: JWSAlgorithm = .es256, status: String = "active",
        publishUntil: Date? = nil, in database: Database
    ) async throws -> AdminTokenMinter {
        let key = try SigningKey.generate(algorithm)
        let kid = "k-\(UUID().uuidString.lowercased().prefix(8))"
        let jwk = String(decoding: try JSONEncoder().encode(key.publicJWK(kid: kid)), as: UTF8.self)
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO signing_keys (tenant_id, kid, algorithm, public_jwk, encrypted_private_key, status,
                                          activated_at, publish_until)
                VALUES (\(tenant), \(kid), \(algorithm.rawValue), \(jwk)::jsonb, '\\x00'::bytea, \(status),
                        now(), \(publishUntil))
                """, logger: database.logger)
        }
        return AdminTokenMinter(tenant: tenant, issuerBase: issuerBase, kid: kid, key: key)
    }

    public init(tenant: String, issuerBase: String, kid: String, key: SigningKey) {
        self.tenant = tenant
        self.issuerBase = issuerBase
        self.kid = kid
        self.key = key
    }

    /// The claims of a client-credentials admin token; tests change members to break it.
    public func claims(scope: String = "admin", lifetime: TimeInterval = 300, now: Date = Date()) -> [String: JSONValue]
    {
        [
            "iss": .string("\(issuerBase)/t/\(tenant)"),
            "sub": "admin-cli",
            "client_id": "admin-cli",
            "aud": .string("\(issuerBase)/t/\(tenant)/audit"),
            "scope": .string(scope),
            "jti": .string(UUID().uuidString),
            "iat": .number(now.timeIntervalSince1970.rounded(.down)),
            "exp": .number((now.timeIntervalSince1970 + lifetime).rounded(.down)),
        ]
    }

    /// A signed token (`typ: at+jwt`, this key's `kid`) carrying `claims`.
    public func token(_ claims: [String: JSONValue], typ: String? = "at+jwt", kid: String? = nil) throws -> String {
        try CompactJWS.sign(
            payload: Data(CanonicalJSON.encode(.object(claims))), using: key,
            header: JWSHeaderParameters(typ: typ, kid: kid ?? self.kid))
    }

    /// A valid admin token.
    public func token(scope: String = "admin") throws -> String {
        try token(claims(scope: scope))
    }

    /// `Authorization` header value for a valid admin token.
    public func authorization(scope: String = "admin") throws -> String {
        "Bearer \(try token(scope: scope))"
    }
}
