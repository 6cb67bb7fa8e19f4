import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import Logging
import PostgresNIO

/// The upstream identity providers of a policy an admin writes. A tenant admin gives a provider's client
/// secret as a value (`client_secret`): it is sealed under the key-encryption key into
/// `upstream_client_secrets` and removed from the policy, never returned and never logged. References to
/// the environment or files (`client_secret_ref`) are for operators: only those on the operator's
/// allow-list are accepted, so no tenant admin can point the token service at a platform secret. The
/// provider's issuer must be a URL outgoing requests may reach (https, unless the operator allows http
/// on loopback for development).
struct UpstreamProviderSecrets: Sendable {
    let envelope: KeyEnvelope?
    let references: SecretReferenceAllowList
    let outbound: OutboundPolicy

    /// A policy without secret values, plus the sealed values to store with it.
    struct Prepared: Sendable {
        var policy: TenantPolicy
        var sealed: [(provider: String, value: Data)]
    }

    /// Checks every provider and seals the given secrets; nothing touches the database yet.
    func prepare(_ policy: TenantPolicy, tenant: String) throws -> Prepared {
        var stripped = policy
        var sealed: [(provider: String, value: Data)] = []
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
                guard let envelope else {
                    throw OAuthError(
                        .serviceUnavailable, "temporarily_unavailable",
                        "storing upstream client secrets needs KEY_ENCRYPTION_KEY on the registration gateway")
                }
                let context = UpstreamIdentityProvider.sealedSecretContext(tenant: tenant, provider: provider.id)
                do { sealed.append((provider.id, try envelope.seal(Data(secret.utf8), associatedData: context))) } catch
                {
                    throw OAuthError(
                        .serviceUnavailable, "temporarily_unavailable", "the client secret could not be sealed")
                }
                provider.clientSecret = nil
            }
            stripped.upstreamIdentityProviders[index] = provider
        }
        return Prepared(policy: stripped, sealed: sealed)
    }

    /// Stores the sealed values, checks that every provider without a reference has a secret (given now
    /// or earlier), and drops the secrets of providers the policy no longer lists; in the caller's transaction.
    func store(_ prepared: Prepared, tenant: String, on connection: PostgresConnection, logger: Logger) async throws {
        for (provider, value) in prepared.sealed {
            try await connection.query(
                """
                INSERT INTO upstream_client_secrets (tenant_id, provider_id, sealed, updated_at)
                VALUES (\(tenant), \(provider), \(value), now())
                ON CONFLICT (tenant_id, provider_id) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()
                """, logger: logger)
        }
        let ids = prepared.policy.upstreamIdentityProviders.map(\.id)
        try await connection.query(
            "DELETE FROM upstream_client_secrets WHERE tenant_id = \(tenant) AND provider_id <> ALL(\(ids))",
            logger: logger)
        var stored: Set<String> = []
        let rows = try await connection.query(
            "SELECT provider_id FROM upstream_client_secrets WHERE tenant_id = \(tenant)", logger: logger)
        for try await id in rows.decode(String.self) { stored.insert(id) }
        for (index, provider) in prepared.policy.upstreamIdentityProviders.enumerated()
        where provider.clientSecretRef == nil && !stored.contains(provider.id) {
            throw OAuthError.invalidRequest("upstream_identity_providers[\(index)].client_secret is required")
        }
    }
}
