import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import PostgresNIO

extension RegistrationService {
    /// What ``registerInOneStatement(_:caller:tenant:source:open:)`` did.
    enum OneStatementOutcome: Sendable {
        case registered(RegistrationResponse)
        /// Nothing was counted or written: the request takes the statement-by-statement path, rate limits first.
        case notAttempted
        /// The request was counted against the rate limits and nothing else was written: the
        /// statement-by-statement path without counting it again.
        case counted
    }

    /// The common registration (no software statement) as one statement: rate-limit counters, the initial
    /// access token's use or the user's checks, the client and its `ClientRegistered` row, one commit. Whatever
    /// that statement cannot decide alone (invalid metadata, whose error must come in the usual order; a
    /// template changed since it was cached; an app instance registering again; a user at
    /// `max_clients_per_user`) goes back to the statement-by-statement path.
    func registerInOneStatement(
        _ body: RegistrationRequestBody, caller: Caller, tenant: ResolvedTenant, source: String, open: Bool
    ) async throws -> OneStatementOutcome {
        let request = body.metadata
        guard request.softwareStatement == nil else { return .notAttempted }
        let policy = tenant.policy
        var template: ClientTemplate?
        if let softwareID = request.softwareID {
            template = try await templates.template(softwareID: softwareID, tenant: tenant.id, database: database)
        }
        let metadata: ClientMetadata
        do {
            let requested = try template?.validatedInstanceMetadata(for: request) ?? request
            metadata = try ClientMetadataValidator(policy: policy).validate(requested)
        } catch {
            return .notAttempted
        }
        let hasher = settings.secretHasher
        let now = Date()
        let clientID = RandomUUID.string()
        let registrationToken = SecretTokens.generate(prefix: "lk_rat_")
        let mechanism: RegistrationMechanism
        var user: UUID?
        var instance: String?
        var tokenHash: String?
        switch caller {
        case .user(let id, let jkt):
            mechanism = .userToken
            user = id
            instance = jkt
        case .initialAccessToken(let token):
            mechanism = .initialAccessToken
            tokenHash = hasher.hash(token)
        case .open:
            mechanism = .open
        }
        let (record, secret) = Self.newClient(
            clientID, tenant: tenant, metadata: metadata, user: user, templateID: template?.id, mechanism: mechanism,
            policy: policy, at: now)
        let secretExpiry = record.secretExpiresAt
        let storedMetadata = String(decoding: try LatchkeyJSON.encode(metadata), as: UTF8.self)
        let overrides = try template.map { _ in
            String(decoding: try LatchkeyJSON.encode(ClientTemplate.instanceOverrides(from: request)), as: UTF8.self)
        }
        let actor: EventActor = user.map(EventActor.user) ?? .client(clientID)
        let row = try outbox.row(
            for: CloudEvent(
                source: EventSource.registrationGateway, data: ClientRegistered(record: record, actor: actor)))
        let buckets = RegistrationRateLimiter.buckets(
            for: policy.rateLimits.registration, source: source, open: open)
        let statement = RegisterClientStatement(
            tenant: tenant.id, buckets: buckets, windowSeconds: RegistrationRateLimiter.windowSeconds,
            initialAccessTokenHash: tokenHash, userID: user, instanceJKT: instance,
            maxClientsPerUser: policy.maxClientsPerUser, softwareID: request.softwareID,
            templateVersion: template?.version, clientID: clientID, clientType: record.clientType.rawValue,
            applicationType: record.applicationType.rawValue, mechanism: mechanism.rawValue, metadata: storedMetadata,
            secretHash: secret.map(hasher.hash), secretExpiresAt: secretExpiry,
            registrationTokenHash: hasher.hash(registrationToken), createdAt: now, templateOverrides: overrides,
            event: row, relayWokenByCaller: outbox.relayWokenByCaller)
        let result = try await database.withStatementTransaction(tenant: tenant.id) {
            var result: (outcome: String, retryAfter: Double?)?
            for try await value in try await database.client.execute(statement, logger: database.logger) {
                result = value
            }
            return result
        }
        switch result?.outcome {
        case "registered":
            outbox.announceCommitted()
            return .registered(
                RegistrationResponse(
                    record: record, clientSecret: secret, registrationAccessToken: registrationToken,
                    registrationClientURI: settings.registrationClientURI(tenant: tenant.id, clientID: clientID),
                    softwareStatement: nil))
        case "rate_limited":
            throw RegistrationRateLimiter.refusal(
                retryAfter: RegistrationRateLimiter.retryAfterSeconds(result?.retryAfter ?? 0))
        case "invalid_initial_access_token":
            throw BearerToken.invalidToken("initial access token is unknown, expired, revoked or used up")
        case "invalid_user":
            throw BearerToken.invalidToken("token subject is not an active user of this tenant")
        case "stale":
            if let softwareID = request.softwareID { templates.forget(softwareID: softwareID, tenant: tenant.id) }
            return .counted
        case "instance_exists", "at_client_limit":
            return .counted
        default:
            throw DatabaseFunctionOutcomeUnknown(function: "register_client", outcome: result?.outcome)
        }
    }
}

/// A database function answered with an outcome this build does not know (a schema newer than the code).
struct DatabaseFunctionOutcomeUnknown: Error, CustomStringConvertible {
    let function: String
    let outcome: String?
    var description: String { "\(function) returned an unknown outcome: \(outcome ?? "nothing")" }
}
