import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import Logging
import PostgresNIO

/// The upstream identity providers of a policy an admin writes. A tenant admin gives a provider's client
/// secret as a value (`client_secret`), or a private key (`client_secret_jwt.private_key` for JWT client
/// secrets, `private_key_jwt.private_key` for client assertions): it is sealed under the key-encryption
/// key into `upstream_client_secrets` and removed from the policy, never returned and never logged.
/// References to the environment or files (`client_secret_ref`) are for operators: only those on the
/// operator's allow-list are accepted, so no tenant admin can point the token service at a platform
/// secret. The provider's issuer must be a URL outgoing requests may reach (https, unless the operator
/// allows http on loopback for development).
struct UpstreamProviderSecrets: Sendable {
    let envelope: KeyEnvelope?
    let references: SecretReferenceAllowList
    let outbound: OutboundPolicy

    /// A credential to seal for one provider.
    struct Sealed: Sendable {
        var provider: String
        var kind: UpstreamCredentialKind
        var value: Data
    }

    /// A policy without secret values, plus the sealed values to store with it.
    struct Prepared: Sendable {
        var policy: TenantPolicy
        var sealed: [Sealed]
    }

    /// Checks every provider and seals the given credentials; nothing touches the database yet. The public
    /// key of a `private_key_jwt` provider comes from its new private key, or from `previous` (the policy
    /// being replaced) when the key is kept.
    func prepare(_ policy: TenantPolicy, tenant: String, previous: TenantPolicy? = nil) throws -> Prepared {
        var stripped = policy
        var sealed: [Sealed] = []
        for index in stripped.upstreamIdentityProviders.indices {
            var provider = stripped.upstreamIdentityProviders[index]
            let path = "upstream_identity_providers[\(index)]"
            do throws(OutboundPolicy.Refusal) { _ = try outbound.target(provider.issuer) } catch {
                throw OAuthError.invalidRequest("\(path).issuer: \(error.description)")
            }
            if let reference = provider.clientSecretRef, !references.allows(reference) {
                throw OAuthError.invalidRequest(
                    "\(path).client_secret_ref: references to the environment or files are reserved to operators; give the secret as client_secret"
                )
            }
            if let secret = provider.clientSecret {
                sealed.append(try seal(Data(secret.utf8), .clientSecret, tenant: tenant, provider: provider.id))
                provider.clientSecret = nil
            }
            if let pem = provider.clientSecretJWT?.privateKey {
                let key = try Self.key(pem, at: "\(path).client_secret_jwt.private_key")
                sealed.append(
                    try seal(key.pkcs8DERRepresentation, .clientSecretJWTKey, tenant: tenant, provider: provider.id))
                provider.clientSecretJWT?.privateKey = nil
            }
            if var settings = provider.privateKeyJWT {
                if let pem = settings.privateKey {
                    let key = try Self.key(pem, at: "\(path).private_key_jwt.private_key")
                    sealed.append(
                        try seal(key.pkcs8DERRepresentation, .privateKeyJWTKey, tenant: tenant, provider: provider.id))
                    let kid = try settings.keyID ?? key.publicJWK().thumbprint()
                    settings.keyID = kid
                    settings.publicJWK = key.publicJWK(kid: kid)
                    settings.privateKey = nil
                } else {
                    // The key stays: so does its public half, which only the gateway sets.
                    let kept = previous?.upstreamIdentityProvider(id: provider.id)?.privateKeyJWT
                    settings.keyID = settings.keyID ?? kept?.keyID
                    settings.publicJWK = kept?.publicJWK.map { jwk in
                        var renamed = jwk
                        renamed.kid = settings.keyID
                        return renamed
                    }
                }
                provider.privateKeyJWT = settings
            }
            stripped.upstreamIdentityProviders[index] = provider
        }
        return Prepared(policy: stripped, sealed: sealed)
    }

    private static func key(_ pem: String, at path: String) throws -> SigningKey {
        do throws(JOSEError) { return try SigningKey(pem: pem) } catch {
            throw OAuthError.invalidRequest("\(path): \(error.reason)")
        }
    }

    private func seal(_ value: Data, _ kind: UpstreamCredentialKind, tenant: String, provider: String) throws
        -> Sealed
    {
        guard let envelope else {
            throw OAuthError(
                .serviceUnavailable, "temporarily_unavailable",
                "storing upstream credentials needs KEY_ENCRYPTION_KEY on the registration gateway")
        }
        let context = UpstreamIdentityProvider.sealedCredentialContext(kind, tenant: tenant, provider: provider)
        do {
            return Sealed(provider: provider, kind: kind, value: try envelope.seal(value, associatedData: context))
        } catch {
            throw OAuthError(.serviceUnavailable, "temporarily_unavailable", "the credential could not be sealed")
        }
    }

    /// Stores the sealed values, checks that every provider without a reference has a credential of the
    /// kind it needs (given now or earlier), and drops the credentials of providers the policy no longer
    /// lists; in the caller's transaction.
    func store(_ prepared: Prepared, tenant: String, on connection: PostgresConnection, logger: Logger) async throws {
        for item in prepared.sealed {
            try await connection.query(
                """
                INSERT INTO upstream_client_secrets (tenant_id, provider_id, sealed, kind, updated_at)
                VALUES (\(tenant), \(item.provider), \(item.value), \(item.kind.rawValue), now())
                ON CONFLICT (tenant_id, provider_id)
                DO UPDATE SET sealed = EXCLUDED.sealed, kind = EXCLUDED.kind, updated_at = now()
                """, logger: logger)
        }
        let ids = prepared.policy.upstreamIdentityProviders.map(\.id)
        try await connection.query(
            "DELETE FROM upstream_client_secrets WHERE tenant_id = \(tenant) AND provider_id <> ALL(\(ids))",
            logger: logger)
        var stored: [String: String] = [:]
        let rows = try await connection.query(
            "SELECT provider_id, kind FROM upstream_client_secrets WHERE tenant_id = \(tenant)", logger: logger)
        for try await (id, kind) in rows.decode((String, String).self) { stored[id] = kind }
        for (index, provider) in prepared.policy.upstreamIdentityProviders.enumerated() {
            guard let kind = provider.sealedCredentialKind, stored[provider.id] != kind.rawValue else { continue }
            let member =
                switch kind {
                case .clientSecret: "client_secret"
                case .clientSecretJWTKey: "client_secret_jwt.private_key"
                case .privateKeyJWTKey: "private_key_jwt.private_key"
                }
            throw OAuthError.invalidRequest("upstream_identity_providers[\(index)].\(member) is required")
        }
    }
}
