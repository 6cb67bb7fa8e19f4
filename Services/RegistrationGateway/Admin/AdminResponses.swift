import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

// The admin API's answers. Encoded by the request context's `LatchkeyResponseEncoder` (sorted keys,
// RFC 3339 dates, `Cache-Control: no-store`); absent optionals are left out, never `null`.

/// `POST /admin/tenants`, `GET /admin/tenants/{tenant}`.
struct TenantView: ResponseEncodable, Sendable {
    var tenantID: String
    var displayName: String
    var status: String
    var policyVersion: Int
    var policy: TenantPolicy

    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case displayName = "display_name"
        case status
        case policyVersion = "policy_version"
        case policy
    }
}

/// One tenant of `GET /admin/tenants`.
struct TenantSummaryView: Encodable, Sendable {
    var tenantID: String
    var displayName: String
    var status: String
    var policyVersion: Int
    var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case displayName = "display_name"
        case status
        case policyVersion = "policy_version"
        case createdAt = "created_at"
    }
}

/// `GET /admin/tenants`.
struct TenantListView: ResponseEncodable, Sendable {
    var tenants: [TenantSummaryView]
}

/// `PUT /admin/tenants/{tenant}/policy`.
struct TenantPolicyView: ResponseEncodable, Sendable {
    var tenantID: String
    var policyVersion: Int
    var policy: TenantPolicy

    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case policyVersion = "policy_version"
        case policy
    }
}

/// A client as an administrator sees it: the RFC 7591 client information plus what only an
/// administrator sets or reads.
struct AdminClientView: ResponseEncodable, Sendable {
    var registration: RegistrationResponse
    /// Only when reading a stored client.
    var status: ClientStatus?
    var authenticatedUser: UUID?
    var firstParty: Bool

    enum CodingKeys: String, CodingKey {
        case status
        case authenticatedUser = "authenticated_user"
        case firstParty = "first_party"
    }

    func encode(to encoder: any Encoder) throws {
        try registration.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(status, forKey: .status)
        try container.encodeIfPresent(authenticatedUser?.uuidString.lowercased(), forKey: .authenticatedUser)
        try container.encode(firstParty, forKey: .firstParty)
    }
}

/// `GET /admin/tenants/{tenant}/clients`: a page of the search, newest first.
struct ClientListView: ResponseEncodable, Sendable {
    var clients: [ClientSearch.Summary]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case clients
        case nextCursor = "next_cursor"
    }
}

/// `POST …/clients/{client_id}/revoke`.
struct ClientRevokedView: ResponseEncodable, Sendable {
    var clientID: String
    var status = "revoked"
    var revokedAt: Date
    var reason: String

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case status
        case revokedAt = "revoked_at"
        case reason
    }
}

/// `POST …/clients/{client_id}/rotate-secret`: the new secret, shown once.
struct SecretRotatedView: ResponseEncodable, Sendable {
    var clientID: String
    var clientSecret: String
    /// Seconds since the epoch, 0 = never (RFC 7591).
    var clientSecretExpiresAt: Int
    /// Until when the replaced secret still authenticates; absent when it stopped at once.
    var previousSecretExpiresAt: Date?

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case clientSecret = "client_secret"
        case clientSecretExpiresAt = "client_secret_expires_at"
        case previousSecretExpiresAt = "previous_secret_expires_at"
    }
}

/// `POST …/users/{user_id}/revoke-clients`.
struct UserClientsRevokedView: ResponseEncodable, Sendable {
    var authenticatedUser: String
    var revoked: [String]
    var reason: String
    var sessionsEnded: Int
    var refreshTokensRevoked: Int
    var accessTokensRevoked: Int

    enum CodingKeys: String, CodingKey {
        case authenticatedUser = "authenticated_user"
        case revoked, reason
        case sessionsEnded = "sessions_ended"
        case refreshTokensRevoked = "refresh_tokens_revoked"
        case accessTokensRevoked = "access_tokens_revoked"
    }
}

/// `POST …/users/{user_id}/disable` and `…/enable`; only disabling ends sessions and tokens.
struct UserStatusView: ResponseEncodable, Sendable {
    var userID: String
    var disabled: Bool
    var reason: String
    var changedAt: Date
    /// Nil when enabling.
    var ended: UserRevocation.Outcome?

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case status, reason
        case disabledAt = "disabled_at"
        case enabledAt = "enabled_at"
        case sessionsEnded = "sessions_ended"
        case refreshTokensRevoked = "refresh_tokens_revoked"
        case accessTokensRevoked = "access_tokens_revoked"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userID, forKey: .userID)
        try container.encode(disabled ? "disabled" : "active", forKey: .status)
        try container.encode(reason, forKey: .reason)
        try container.encode(changedAt, forKey: disabled ? .disabledAt : .enabledAt)
        if let ended {
            try container.encode(ended.sessions, forKey: .sessionsEnded)
            try container.encode(ended.refreshTokens, forKey: .refreshTokensRevoked)
            try container.encode(ended.accessTokens, forKey: .accessTokensRevoked)
        }
    }
}

/// `POST …/users`.
struct UserCreatedView: ResponseEncodable, Sendable {
    var userID: String
    var username: String

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case username
    }
}

/// A template as the admin API lists it.
struct TemplateView: Encodable, Sendable {
    var softwareID: String
    var version: Int
    var metadata: ClientMetadata
    var overridableFields: [String]

    enum CodingKeys: String, CodingKey {
        case softwareID = "software_id"
        case version, metadata
        case overridableFields = "overridable_fields"
    }
}

/// `POST|PUT …/templates`: the stored template and how many instances followed it.
struct TemplateStoredView: ResponseEncodable, Sendable {
    var template: TemplateView
    var instancesUpdated: Int

    enum CodingKeys: String, CodingKey {
        case instancesUpdated = "instances_updated"
    }

    func encode(to encoder: any Encoder) throws {
        try template.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(instancesUpdated, forKey: .instancesUpdated)
    }
}

/// `GET …/templates`.
struct TemplateListView: ResponseEncodable, Sendable {
    var templates: [TemplateView]
}

/// `POST …/initial-access-tokens`: the token, shown once.
struct InitialAccessTokenView: ResponseEncodable, Sendable {
    var tokenID: String
    var initialAccessToken: String
    var remainingUses: Int
    var expiresAt: Date

    enum CodingKeys: String, CodingKey {
        case tokenID = "token_id"
        case initialAccessToken = "initial_access_token"
        case remainingUses = "remaining_uses"
        case expiresAt = "expires_at"
    }
}

/// One stored signing key with its lifecycle name at the time of the request; never key material.
struct SigningKeyView: Encodable, Sendable {
    var key: SigningKeyRecord
    var now: Date

    enum CodingKeys: String, CodingKey {
        case kid, alg, status
        case createdAt = "created_at"
        case activatedAt = "activated_at"
        case retiredAt = "retired_at"
        case retireAfter = "retire_after"
        case stagedBy = "staged_by"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key.kid, forKey: .kid)
        try container.encode(key.algorithm, forKey: .alg)
        try container.encode(key.lifecycleName(at: now), forKey: .status)
        try container.encode(key.createdAt, forKey: .createdAt)
        try container.encodeIfPresent(key.activatedAt, forKey: .activatedAt)
        try container.encodeIfPresent(key.retiredAt, forKey: .retiredAt)
        try container.encodeIfPresent(key.publishUntil, forKey: .retireAfter)
        try container.encodeIfPresent(key.stagedBy, forKey: .stagedBy)
    }
}

/// `GET …/keys`.
struct SigningKeyListView: ResponseEncodable, Sendable {
    var tenantID: String
    var signingAlgorithm: String
    var keys: [SigningKeyView]

    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case signingAlgorithm = "signing_algorithm"
        case keys
    }
}

/// `POST …/keys/rotate`: the staged key, and the policy version when staging changed the policy.
struct SigningKeyStagedView: ResponseEncodable, Sendable {
    var key: SigningKeyView
    var tenantID: String
    var policyVersion: Int?

    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case policyVersion = "policy_version"
    }

    func encode(to encoder: any Encoder) throws {
        try key.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tenantID, forKey: .tenantID)
        try container.encodeIfPresent(policyVersion, forKey: .policyVersion)
    }
}
