import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Whether a signed-in user must approve a client before it gets a code, and the consents users gave
/// (`consents`: per tenant, user and client, the approved scopes, until the policy's `remember_for`).
enum Consents {
    enum Decision: Equatable {
        /// No question: the code is issued.
        case silent
        /// The consent page (or `consent_required` under `prompt=none`).
        case ask
    }

    /// In order: the tenant's policy or `prompt=consent` asks; the user's own instance passes (the mobile
    /// flow's second sign-in); another user's instance asks; an administrator's first-party client passes;
    /// anything else asks. A remembered consent covering the requested scopes answers every "ask" except
    /// `prompt=consent`.
    static func decide(
        _ pending: AuthorizationRequest, client: StoredClient, userID: UUID, policy: ConsentPolicy,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Decision {
        if pending.forceConsent == true { return .ask }
        if !policy.required {
            if let owner = client.authenticatedUser {
                if owner == userID { return .silent }
            } else if client.firstParty {
                return .silent
            }
        }
        let remembered = try await rememberedScopes(
            userID: userID, clientID: client.clientID, on: connection, logger: logger)
        guard let remembered else { return .ask }
        return Set(TenantPolicy.scopeTokens(pending.scope)).isSubset(of: remembered) ? .silent : .ask
    }

    /// The scopes of the user's unexpired consent to the client, if any.
    static func rememberedScopes(
        userID: UUID, clientID: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> Set<String>? {
        let rows = try await connection.query(
            """
            SELECT scope FROM consents
            WHERE user_id = \(userID) AND client_id = \(clientID) AND expires_at > now()
            """, logger: logger)
        for try await scope in rows.decode(String.self) { return Set(TenantPolicy.scopeTokens(scope)) }
        return nil
    }

    /// Records an approval for `rememberFor` seconds (0: nothing is kept). The stored scopes become the
    /// union of the unexpired consent and the new one, so approving a wider request never narrows an
    /// earlier approval; an expired consent is replaced.
    static func remember(
        userID: UUID, clientID: String, scope: String, rememberFor: Int, tenant: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard rememberFor > 0 else { return }
        let previous =
            try await rememberedScopes(userID: userID, clientID: clientID, on: connection, logger: logger) ?? []
        let scopes = previous.union(TenantPolicy.scopeTokens(scope)).sorted().joined(separator: " ")
        let expires = Date().addingTimeInterval(TimeInterval(rememberFor))
        try await connection.query(
            """
            INSERT INTO consents (tenant_id, user_id, client_id, scope, granted_at, expires_at)
            VALUES (\(tenant), \(userID), \(clientID), \(scopes), now(), \(expires))
            ON CONFLICT (tenant_id, user_id, client_id)
            DO UPDATE SET scope = EXCLUDED.scope, granted_at = EXCLUDED.granted_at, expires_at = EXCLUDED.expires_at
            """, logger: logger)
    }
}
