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

    /// Who is registering, as far as can be told before the transaction.
    enum Caller: Sendable {
        case user(UUID)
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
            return .user(try await userTokens.verifyDCRToken(credential, request: request, tenant: tenant.id))
        }
        guard !credential.isDPoP else { throw BearerToken.invalidToken("an initial access token is a Bearer token") }
        guard policy.allows(.initialAccessToken) else {
            throw BearerToken.invalidToken("this tenant does not accept initial access tokens")
        }
        return .initialAccessToken(credential.token)
    }

    func register(_ request: ClientMetadata, caller: Caller, tenant: ResolvedTenant) async throws
        -> RegistrationResponse
    {
        let policy = tenant.policy
        // Verified before the transaction: fetching an issuer's keys must not hold a connection.
        let request = try await statements.applying(to: request, policy: policy)
        let now = Date()
        let clientID = UUID().uuidString.lowercased()
        let registrationToken = SecretTokens.generate(prefix: "lk_rat_")
        let hasher = settings.secretHasher
        return try await database.withTenantTransaction(tenant.id) { connection in
            let mechanism: RegistrationMechanism
            var user: UUID?
            switch caller {
            case .user(let id):
                mechanism = .userToken
                user = id
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
                if policy.maxClientsPerUser > 0 && active >= policy.maxClientsPerUser {
                    throw OAuthError(
                        .forbidden, "access_denied",
                        "this user already has \(active) active clients (max_clients_per_user is \(policy.maxClientsPerUser))"
                    )
                }
            }
            let method = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
            let secret = method.usesClientSecret ? SecretTokens.generate(prefix: "lk_cs_") : nil
            let secretExpiry =
                secret != nil && policy.clientSecretLifetime > 0
                ? now.addingTimeInterval(TimeInterval(policy.clientSecretLifetime)) : nil
            let record = ClientRecord(
                clientID: clientID, tenant: tenant.slug, clientType: method.clientType,
                applicationType: metadata.applicationType ?? .native, authenticatedUser: user, templateID: template?.id,
                metadata: metadata, secretExpiresAt: secretExpiry, createdAt: now, updatedAt: now,
                registrationMechanism: mechanism)
            try await ClientRepository.insert(
                record, secretHash: secret.map(hasher.hash), registrationTokenHash: hasher.hash(registrationToken),
                template: template.map {
                    TemplateLink(overrides: ClientTemplate.instanceOverrides(from: request), version: $0.version)
                },
                on: connection, logger: database.logger)
            let actor: EventActor = user.map(EventActor.user) ?? .client(clientID)
            try await outbox.append(
                CloudEvent(
                    source: EventSource.registrationGateway, data: ClientRegistered(record: record, actor: actor)),
                on: connection, logger: database.logger)
            return RegistrationResponse(
                record: record, clientSecret: secret, registrationAccessToken: registrationToken,
                registrationClientURI: settings.registrationClientURI(tenant: tenant.id, clientID: clientID),
                softwareStatement: request.softwareStatement)
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
