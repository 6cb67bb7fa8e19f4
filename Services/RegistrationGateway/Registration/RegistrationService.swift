import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// RFC 7591 registration: authenticates the caller by the tenant's mechanisms, validates the
/// metadata, and stores the client, its hashed credentials and `ClientRegistered` in one transaction.
struct RegistrationService: Sendable {
    let settings: GatewaySettings
    let database: Database
    let userTokens: UserTokenVerifier
    let outbox: OutboxWriter
    let statements: SoftwareStatementVerifier
    /// Templates for validating a registration before its one statement (which checks their version).
    let templates = TemplateCache()

    /// Who is registering, as far as can be told before the transaction.
    enum Caller: Sendable {
        /// A user's DCR token, with the app instance's key when the request proved one.
        case user(UUID, instanceJKT: String?)
        case initialAccessToken(String)
        case open
    }

    /// Maps the bearer token (or its absence) to a mechanism the tenant's policy allows.
    func authenticate(_ request: Request, tenant: ResolvedTenant) async throws -> Caller {
        let policy = tenant.policy
        let credential = try BearerToken.credential(from: request, acceptingDPoP: true)
        guard let credential else {
            guard policy.allows(.open) else { throw BearerToken.invalidToken("a bearer token is required to register") }
            return .open
        }
        // A JWT has exactly two dots; opaque initial access tokens (base64url) have none.
        let token = credential.token
        if token.utf8.filter({ $0 == UInt8(ascii: ".") }).count == 2 {
            guard policy.allows(.userToken) else {
                throw BearerToken.invalidToken("this tenant does not accept user tokens for registration")
            }
            let subject = try await userTokens.verifyDCRToken(credential, request: request, tenant: tenant.id)
            return .user(subject.user, instanceJKT: subject.instanceJKT)
        }
        guard !credential.isDPoP else { throw BearerToken.invalidToken("an initial access token is a Bearer token") }
        guard policy.allows(.initialAccessToken) else {
            throw BearerToken.invalidToken("this tenant does not accept initial access tokens")
        }
        return .initialAccessToken(credential.token)
    }

    /// Registers under an `Idempotency-Key` when one is sent: the first request with the key registers,
    /// a retry with the same body gets the same client with fresh credentials (201), a different body 422,
    /// and a retry while the first is still running 409. `source` is the client address (the principal of
    /// open registration).
    func register(
        _ body: RegistrationRequestBody, caller: Caller, tenant: ResolvedTenant, source: String,
        idempotencyKey: IdempotencyKey?
    ) async throws -> RegistrationResponse {
        guard let idempotencyKey else { return try await register(body.metadata, caller: caller, tenant: tenant) }
        let hasher = settings.secretHasher
        let entry = IdempotencyStore.Entry(
            tenant: tenant.id, principal: try await principal(of: caller, source: source, tenant: tenant),
            keyHash: hasher.hash(idempotencyKey.value), requestHash: hasher.hash(body.canonical))
        switch try await IdempotencyStore.claim(entry, in: database) {
        case .acquired:
            do {
                return try await register(body.metadata, caller: caller, tenant: tenant, idempotency: entry)
            } catch {
                // The key is given back so the same request can be retried once the cause is fixed.
                try? await database.withTenantTransaction(tenant.id) { connection in
                    try await IdempotencyStore.release(entry, on: connection, logger: database.logger)
                }
                throw error
            }
        case .mismatch:
            throw OAuthError(
                .unprocessableContent, "invalid_request",
                "this Idempotency-Key was already used with a different request body")
        case .inFlight:
            throw OAuthError(
                .conflict, "invalid_request", "a request with this Idempotency-Key is still being processed",
                headers: [.retryAfter: "1"])
        case .completed(let clientID):
            return try await database.withTenantTransaction(tenant.id) { connection in
                guard
                    let stored = try await ClientRepository.find(
                        clientID, tenant: tenant.id, forUpdate: true, on: connection, logger: database.logger),
                    stored.record.status == .active
                else {
                    throw OAuthError(
                        .conflict, "invalid_request",
                        "the client registered with this Idempotency-Key is no longer active; use a new key")
                }
                return try await reissue(
                    stored, caller: caller, tenant: tenant, softwareStatement: body.metadata.softwareStatement,
                    on: connection)
            }
        }
    }

    /// The principal an idempotency key belongs to: the user, the initial access token (by id, not by the
    /// token, so a used-up token still finds its key), or the source address of an open registration.
    private func principal(of caller: Caller, source: String, tenant: ResolvedTenant) async throws -> String {
        switch caller {
        case .user(let user, _):
            return "user:\(user.uuidString.lowercased())"
        case .initialAccessToken(let token):
            let hash = settings.secretHasher.hash(token)
            let id = try await database.withTenantTransaction(tenant.id) { connection in
                try await RegistrationCredentialStore.initialAccessTokenID(
                    hash: hash, tenant: tenant.id, on: connection, logger: database.logger)
            }
            guard let id else { throw BearerToken.invalidToken("initial access token is unknown, expired or revoked") }
            return "iat:\(id.uuidString.lowercased())"
        case .open:
            return "source:\(source)"
        }
    }

    func register(
        _ request: ClientMetadata, caller: Caller, tenant: ResolvedTenant, idempotency: IdempotencyStore.Entry? = nil
    ) async throws -> RegistrationResponse {
        let policy = tenant.policy
        // Verified before the transaction: fetching an issuer's keys must not hold a connection.
        let request = try await statements.applying(to: request, policy: policy)
        let now = Date()
        let clientID = RandomUUID.string()
        let registrationToken = SecretTokens.generate(prefix: "lk_rat_")
        let hasher = settings.secretHasher
        return try await database.withTenantTransaction(tenant.id) { connection in
            let mechanism: RegistrationMechanism
            var user: UUID?
            var instance: String?
            switch caller {
            case .user(let id, let jkt):
                mechanism = .userToken
                user = id
                instance = jkt
            case .initialAccessToken(let token):
                guard
                    try await RegistrationCredentialStore.consumeInitialAccessToken(
                        hash: hasher.hash(token), tenant: tenant.id, on: connection, logger: database.logger) != nil
                else { throw BearerToken.invalidToken("initial access token is unknown, expired, revoked or used up") }
                mechanism = .initialAccessToken
            case .open:
                mechanism = .open
            }
            var template: ClientTemplate?
            var requested = request
            if let softwareID = request.softwareID,
                let found = try await RegistrationCredentialStore.template(
                    softwareID: softwareID, tenant: tenant.id, share: true, on: connection, logger: database.logger)
            {
                template = found
                requested = try found.validatedInstanceMetadata(for: request)
            }
            let metadata = try ClientMetadataValidator(policy: policy).validate(requested)
            if let user {
                guard
                    let active = try await ClientRepository.lockUserAndCountActiveClients(
                        user, tenant: tenant.id, on: connection, logger: database.logger)
                else {
                    throw BearerToken.invalidToken("token subject is not an active user of this tenant")
                }
                // The same app instance (it proved the same key) registering again gets its client back.
                if let instance,
                    let existing = try await ClientRepository.lockInstance(
                        user: user, jkt: instance, tenant: tenant.id, on: connection, logger: database.logger),
                    let stored = try await ClientRepository.find(
                        existing, tenant: tenant.id, on: connection, logger: database.logger)
                {
                    let response = try await reissue(
                        stored, caller: caller, tenant: tenant, softwareStatement: request.softwareStatement,
                        on: connection)
                    if let idempotency {
                        try await IdempotencyStore.complete(
                            idempotency, clientID: existing, on: connection, logger: database.logger)
                    }
                    return response
                }
                if policy.maxClientsPerUser > 0 && active >= policy.maxClientsPerUser {
                    try await expireLeastRecentlyUsed(
                        of: user, count: active - policy.maxClientsPerUser + 1, tenant: tenant, at: now,
                        on: connection)
                }
            }
            let (record, secret) = Self.newClient(
                clientID, tenant: tenant, metadata: metadata, user: user, templateID: template?.id,
                mechanism: mechanism, policy: policy, at: now)
            try await ClientRepository.insert(
                record, secretHash: secret.map(hasher.hash), registrationTokenHash: hasher.hash(registrationToken),
                template: template.map {
                    TemplateLink(overrides: ClientTemplate.instanceOverrides(from: request), version: $0.version)
                },
                instanceJKT: instance, on: connection, logger: database.logger)
            let actor: EventActor = user.map(EventActor.user) ?? .client(clientID)
            try await outbox.append(
                CloudEvent(
                    source: EventSource.registrationGateway, data: ClientRegistered(record: record, actor: actor)),
                on: connection, logger: database.logger)
            if let idempotency {
                try await IdempotencyStore.complete(
                    idempotency, clientID: clientID, on: connection, logger: database.logger)
            }
            return RegistrationResponse(
                record: record, clientSecret: secret, registrationAccessToken: registrationToken,
                registrationClientURI: settings.registrationClientURI(tenant: tenant.id, clientID: clientID),
                softwareStatement: request.softwareStatement)
        }
    }

    /// Answers a repeated registration with the client it already made: a new secret (for secret methods) and
    /// registration access token, the old ones dead from this commit on (only their hashes were kept, so the
    /// first answer cannot be repeated), and `ClientUpdated` naming the rotation.
    private func reissue(
        _ stored: StoredClient, caller: Caller, tenant: ResolvedTenant, softwareStatement: String?,
        on connection: PostgresConnection
    ) async throws -> RegistrationResponse {
        let hasher = settings.secretHasher
        let now = Date()
        var record = stored.record
        let registrationToken = SecretTokens.generate(prefix: "lk_rat_")
        let secret = stored.clientSecretHash != nil ? SecretTokens.generate(prefix: "lk_cs_") : nil
        if secret != nil {
            let lifetime = tenant.policy.clientSecretLifetime
            record.secretExpiresAt = lifetime > 0 ? now.addingTimeInterval(TimeInterval(lifetime)) : nil
        }
        record.updatedAt = now
        try await ClientRepository.replaceCredentials(
            record.clientID, tenant: tenant.id, secretHash: secret.map(hasher.hash),
            secretExpiresAt: record.secretExpiresAt, registrationTokenHash: hasher.hash(registrationToken), at: now,
            on: connection, logger: database.logger)
        let actor: EventActor
        switch caller {
        case .user(let user, _): actor = .user(user)
        case .initialAccessToken, .open: actor = .client(record.clientID)
        }
        try await outbox.append(
            CloudEvent(
                source: EventSource.registrationGateway,
                data: ClientUpdated(
                    tenant: tenant.slug, clientID: record.clientID, changedFields: [], secretRotated: secret != nil,
                    registrationTokenRotated: true, authenticatedUser: record.authenticatedUser,
                    templateID: record.templateID, actor: actor)),
            on: connection, logger: database.logger)
        return RegistrationResponse(
            record: record, clientSecret: secret, registrationAccessToken: registrationToken,
            registrationClientURI: settings.registrationClientURI(tenant: tenant.id, clientID: record.clientID),
            softwareStatement: softwareStatement)
    }

    /// Makes room under `max_clients_per_user`: the user's least recently used clients are expired (refresh
    /// tokens revoked, `ClientRevoked` with reason `expired`), so a reinstalled app that lost its key replaces
    /// its old instance instead of locking the user out.
    private func expireLeastRecentlyUsed(
        of user: UUID, count: Int, tenant: ResolvedTenant, at time: Date, on connection: PostgresConnection
    ) async throws {
        let reason = ClientRevoked.Reason.expired
        for _ in 0..<count {
            guard
                let clientID = try await ClientRepository.leastRecentlyUsedClient(
                    of: user, tenant: tenant.id, on: connection, logger: database.logger),
                let stored = try await ClientRepository.find(
                    clientID, tenant: tenant.id, on: connection, logger: database.logger)
            else { return }
            try await ClientRepository.revoke(
                clientID, tenant: tenant.id, status: reason.resultingStatus, reason: reason.rawValue, at: time,
                on: connection, logger: database.logger)
            let expiresAt = try await ClientRepository.accessTokensExpireAt(
                stored.record, revokedAt: time, on: connection, logger: database.logger)
            try await outbox.append(
                CloudEvent(
                    source: EventSource.registrationGateway,
                    data: ClientRevoked(
                        tenant: tenant.slug, clientID: clientID, reason: reason,
                        reasonDetail: "max_clients_per_user reached: least recently used client replaced",
                        authenticatedUser: user, actor: .user(user), revokedAt: time, accessTokensExpireAt: expiresAt)),
                on: connection, logger: database.logger)
        }
    }
}

extension ClientTemplate {
    /// ``instanceMetadata(for:)`` with its refusal as `invalid_client_metadata`.
    func validatedInstanceMetadata(for request: ClientMetadata) throws -> ClientMetadata {
        do { return try instanceMetadata(for: request) } catch {
            throw RegistrationError.invalidMetadata(error.description)
        }
    }
}

extension RegistrationService {
    /// The record of a client about to be registered, and its new secret when its authentication method
    /// uses one (expiring after the policy's `client_secret_lifetime`, when set).
    static func newClient(
        _ clientID: String, tenant: ResolvedTenant, metadata: ClientMetadata, user: UUID?, templateID: String?,
        mechanism: RegistrationMechanism, policy: TenantPolicy, at now: Date
    ) -> (record: ClientRecord, secret: String?) {
        let method = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
        let secret = method.usesClientSecret ? SecretTokens.generate(prefix: "lk_cs_") : nil
        let secretExpiry =
            secret != nil && policy.clientSecretLifetime > 0
            ? now.addingTimeInterval(TimeInterval(policy.clientSecretLifetime)) : nil
        let record = ClientRecord(
            clientID: clientID, tenant: tenant.slug, clientType: method.clientType,
            applicationType: metadata.applicationType ?? .native, authenticatedUser: user, templateID: templateID,
            metadata: metadata, secretExpiresAt: secretExpiry, createdAt: now, updatedAt: now,
            registrationMechanism: mechanism)
        return (record, secret)
    }
}
