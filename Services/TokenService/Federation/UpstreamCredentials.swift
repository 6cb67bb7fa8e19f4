import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// How one code exchange authenticates at an upstream token endpoint.
enum UpstreamClientCredential: Sendable {
    /// `client_secret_basic`: the secret in the Authorization header.
    case basic(secret: String)
    /// `client_secret_post`: the secret in the form body.
    case post(secret: String)
    /// `private_key_jwt`: an RFC 7523 client assertion in the form body.
    case assertion(String)
}

/// A provider's credential when it is needed: the sealed value a tenant admin gave (opened with the
/// key-encryption key), or an operator's `env:`/`file:` reference — only one on the operator's allow-list,
/// read at each use so a rotated secret file is picked up without a restart. Private keys sign a fresh
/// JWT per exchange: five minutes of life is plenty for one request, and nothing needs caching.
struct UpstreamCredentials {
    let envelope: KeyEnvelope
    let references: SecretReferenceAllowList
    let database: Database

    /// Lifetime of generated client secrets and assertions.
    static let jwtLifetime: TimeInterval = 300

    func credential(
        for provider: UpstreamIdentityProvider, tokenEndpoint: String, tenant: String, now: Date = Date()
    ) async throws -> UpstreamClientCredential {
        let secret: String
        switch provider.sealedCredentialKind {
        case nil:
            secret = try referencedSecret(provider)
        case .clientSecret:
            secret = String(decoding: try await sealed(provider, .clientSecret, tenant: tenant), as: UTF8.self)
        case .clientSecretJWTKey:
            guard let settings = provider.clientSecretJWT else {
                throw UpstreamFailure(description: "the provider has no client_secret_jwt settings")
            }
            let key = try SigningKey(
                algorithm: .es256, pkcs8DER: try await sealed(provider, .clientSecretJWTKey, tenant: tenant))
            secret = try Self.clientSecretJWT(
                settings, clientID: provider.clientID, issuer: provider.issuer, key: key, now: now)
        case .privateKeyJWTKey:
            let der = try await sealed(provider, .privateKeyJWTKey, tenant: tenant)
            let key =
                try (try? SigningKey(algorithm: .es256, pkcs8DER: der)) ?? SigningKey(algorithm: .rs256, pkcs8DER: der)
            return .assertion(
                try Self.clientAssertion(
                    clientID: provider.clientID, audience: tokenEndpoint, keyID: provider.privateKeyJWT?.keyID,
                    key: key,
                    now: now))
        }
        let trimmed = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw UpstreamFailure(description: "the provider has no usable client secret") }
        return provider.tokenEndpointAuthMethod == .clientSecretPost ? .post(secret: trimmed) : .basic(secret: trimmed)
    }

    /// Sign in with Apple's client secret: ES256, `kid` = key id, `iss` = team id, `sub` = client id.
    static func clientSecretJWT(
        _ settings: UpstreamClientSecretJWT, clientID: String, issuer: String, key: SigningKey, now: Date
    ) throws -> String {
        struct Claims: Encodable {
            let iss: String
            let sub: String
            let aud: String
            let iat: Int64
            let exp: Int64
        }
        let issuedAt = Int64(now.timeIntervalSince1970)
        return try CompactJWS.sign(
            claims: Claims(
                iss: settings.teamID, sub: clientID, aud: settings.audience ?? issuer, iat: issuedAt,
                exp: issuedAt + Int64(jwtLifetime)),
            using: key, header: JWSHeaderParameters(kid: settings.keyID))
    }

    /// RFC 7523 §3 client assertion: `iss` = `sub` = client id, `aud` = the token endpoint, a fresh `jti`.
    static func clientAssertion(clientID: String, audience: String, keyID: String?, key: SigningKey, now: Date) throws
        -> String
    {
        struct Claims: Encodable {
            let iss: String
            let sub: String
            let aud: String
            let jti: String
            let iat: Int64
            let exp: Int64
        }
        let issuedAt = Int64(now.timeIntervalSince1970)
        return try CompactJWS.sign(
            claims: Claims(
                iss: clientID, sub: clientID, aud: audience, jti: SecretTokens.generate(), iat: issuedAt,
                exp: issuedAt + Int64(jwtLifetime)),
            using: key, header: JWSHeaderParameters(kid: keyID))
    }

    private func referencedSecret(_ provider: UpstreamIdentityProvider) throws -> String {
        guard let reference = provider.clientSecretRef, references.allows(reference) else {
            throw UpstreamFailure(
                description: "client_secret_ref is not on the operator's allow-list (UPSTREAM_SECRET_REFERENCES)")
        }
        let value: String? =
            switch SecretReference(reference) {
            case .environment(let name): getenv(name).map { String(cString: $0) }
            case .file(let path): try? String(contentsOfFile: path, encoding: .utf8)
            case nil: nil
            }
        guard let value else { throw UpstreamFailure(description: "the provider has no usable client secret") }
        return value
    }

    /// The sealed credential of `kind`, opened; a row of another kind is not used.
    private func sealed(_ provider: UpstreamIdentityProvider, _ kind: UpstreamCredentialKind, tenant: String)
        async throws -> Data
    {
        let logger = database.logger
        let sealed: Data? = try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                "SELECT sealed FROM upstream_client_secrets WHERE provider_id = \(provider.id) AND kind = \(kind.rawValue)",
                logger: logger)
            for try await bytes in rows.decode(Data.self) { return bytes }
            return nil
        }
        guard let sealed else { throw UpstreamFailure(description: "the provider's \(kind.rawValue) is not stored") }
        let context = UpstreamIdentityProvider.sealedCredentialContext(kind, tenant: tenant, provider: provider.id)
        return try envelope.open(sealed, associatedData: context)
    }
}
