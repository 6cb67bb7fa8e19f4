import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// RFC 7592 client configuration: read, replace and delete a client with its registration access token.
struct ClientConfigurationService: Sendable {
    let settings: GatewaySettings
    let database: Database
    let outbox: OutboxWriter
    let statements: SoftwareStatementVerifier

    /// Never sent by anyone: 256 random bits drawn when the process starts.
    private static let decoyToken = SecretTokens.generate()

    /// The active client `clientID` of `tenant` whose registration token is `token`; any mismatch is the same 401.
    private func authorize(
        _ clientID: String, token: String?, tenant: String, forUpdate: Bool, on connection: PostgresConnection
    ) async throws -> StoredClient {
        guard let token else { throw BearerToken.invalidToken("a registration access token is required") }
        let presented = settings.secretHasher.hash(token)
        let stored = try await ClientRepository.find(
            clientID, tenant: tenant, forUpdate: forUpdate, on: connection, logger: database.logger)
        // RFC 7592 manages dynamically registered clients only: a client an administrator created has no
        // registration access token, and no string may stand in for the missing one. Unknown and
        // unmanageable clients compare against a decoy hash (same work, same timing as a wrong token);
        // the decoy is random per process, so no request can produce it.
        let decoy = settings.secretHasher.hash(Self.decoyToken)
        let manageable = stored.flatMap { $0.kind == "dynamic" ? $0.registrationTokenHash : nil }
        let matches = ConstantTime.equals(presented, manageable ?? decoy)
        guard matches, manageable != nil, let stored, stored.record.status.isActive else {
            throw BearerToken.invalidToken("the registration access token is not valid for this client")
        }
        return stored
    }

    func read(_ clientID: String, token: String?, tenant: ResolvedTenant) async throws -> RegistrationResponse {
        try await database.withTenantTransaction(tenant.id) { connection in
            let stored = try await authorize(
                clientID, token: token, tenant: tenant.id, forUpdate: false, on: connection)
            return response(for: stored.record, tenant: tenant.id, registrationToken: nil)
        }
    }

    /// RFC 7592 §2.2: replaces the metadata under the registration rules; rotates the token per policy.
    func update(
        _ clientID: String, token: String?, request: ClientMetadata, sentClientID: String?, sentSecret: String?,
        tenant: ResolvedTenant
    ) async throws -> RegistrationResponse {
        let policy = tenant.policy
        let hasher = settings.secretHasher
        // Verified before the transaction: fetching an issuer's keys must not hold a connection.
        let request = try await statements.applying(to: request, policy: policy)
        return try await database.withTenantTransaction(tenant.id) { connection in
            var stored = try await authorize(clientID, token: token, tenant: tenant.id, forUpdate: true, on: connection)
            guard sentClientID == clientID else {
                throw RegistrationError.invalidMetadata("client_id in the body must match the client being updated")
            }
            if let sentSecret {
                guard stored.acceptsSecret(sentSecret, hasher: hasher, at: Date()) else {
                    throw RegistrationError.invalidMetadata("client_secret does not match the client's secret")
                }
            }
            var requested = request
            var link: TemplateLink?
            if let templateID = stored.record.templateID {
                // No share lock here (this transaction already holds the client row, which a template
                // update locks after its template row); such an update waits for this one and then
                // rebuilds the instance from the overrides stored here.
                guard
                    let template = try await RegistrationCredentialStore.template(
                        softwareID: templateID, tenant: tenant.id, on: connection, logger: database.logger)
                else {
                    throw RegistrationError.invalidMetadata("the client's template no longer exists")
                }
                requested = try template.validatedInstanceMetadata(for: request)
                link = TemplateLink(
                    overrides: ClientTemplate.instanceOverrides(from: request), version: template.version)
            }
            let metadata = try ClientMetadataValidator(policy: policy).validate(requested)
            let oldMethod = stored.record.metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
            let newMethod = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
            guard oldMethod.usesClientSecret == newMethod.usesClientSecret else {
                throw RegistrationError.invalidMetadata(
                    "token_endpoint_auth_method cannot switch between secret and non-secret methods")
            }
            var record = stored.record
            let changed = ClientUpdated.changedFields(from: record.metadata, to: metadata)
            record.metadata = metadata
            record.clientType = newMethod.clientType
            record.applicationType = metadata.applicationType ?? .native
            record.updatedAt = Date()
            let newToken = policy.rotateRegistrationAccessToken ? SecretTokens.generate(prefix: "lk_rat_") : nil
            try await ClientRepository.updateMetadata(
                record, registrationTokenHash: newToken.map(hasher.hash), template: link, on: connection,
                logger: database.logger)
            // RFC 7592 §2.2 lets the server issue a new secret here: one that expires soon is replaced, so an
            // instance that updates itself in time never ends up with a dead secret.
            var rotated: ClientSecretRotation.Rotated?
            if ClientSecretRotation.isDue(stored, policy: policy, at: record.updatedAt) {
                stored.record = record
                rotated = try await ClientSecretRotation.rotate(
                    &stored, policy: policy, hasher: hasher, at: record.updatedAt, on: connection,
                    logger: database.logger)
                record = stored.record
            }
            let actor: EventActor = record.authenticatedUser.map(EventActor.user) ?? .client(clientID)
            let event = ClientUpdated(
                tenant: tenant.slug, clientID: clientID, changedFields: changed, secretRotated: rotated != nil,
                registrationTokenRotated: newToken != nil,
                authenticatedUser: record.authenticatedUser, templateID: record.templateID, actor: actor)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection,
                logger: database.logger)
            var updated = response(for: record, tenant: tenant.id, registrationToken: newToken)
            updated.softwareStatement = request.softwareStatement
            updated.clientSecret = rotated?.secret
            return updated
        }
    }

    /// RFC 7592 §2.3 deregistration: status `deleted`, refresh tokens revoked, `ClientRevoked`.
    func delete(_ clientID: String, token: String?, tenant: ResolvedTenant) async throws {
        try await database.withTenantTransaction(tenant.id) { connection in
            let stored = try await authorize(clientID, token: token, tenant: tenant.id, forUpdate: true, on: connection)
            let now = Date()
            let reason = ClientRevoked.Reason.deregistered
            try await ClientRepository.revoke(
                clientID, tenant: tenant.id, status: reason.resultingStatus, reason: reason.rawValue, at: now,
                on: connection,
                logger: database.logger)
            let user = stored.record.authenticatedUser
            let expiry = try await ClientRepository.accessTokensExpireAt(
                stored.record, revokedAt: now, on: connection, logger: database.logger)
            let event = ClientRevoked(
                tenant: tenant.slug, clientID: clientID, reason: reason, authenticatedUser: user,
                actor: user.map(EventActor.user) ?? .client(clientID), revokedAt: now, accessTokensExpireAt: expiry)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection,
                logger: database.logger)
            BusinessMetrics.revoked(event)
        }
    }

    private func response(for record: ClientRecord, tenant: String, registrationToken: String?) -> RegistrationResponse
    {
        RegistrationResponse(
            record: record, clientSecret: nil, registrationAccessToken: registrationToken,
            registrationClientURI: settings.registrationClientURI(tenant: tenant, clientID: record.clientID))
    }
}
