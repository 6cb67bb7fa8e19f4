import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging

/// The admin API (`/admin/...`): tenants and their policy, static clients, revocation, templates,
/// initial access tokens and signing keys. Every change records its actor: in
/// `tenant_policy_versions.changed_by`, `initial_access_tokens.created_by`, `signing_keys.staged_by`, or
/// the `ClientRegistered`/`ClientRevoked` event.
struct AdminController: Sendable {
    typealias Context = LatchkeyRequestContext

    let settings: GatewaySettings
    let authenticator: AdminAuthenticator
    let database: Database
    let systemDatabase: Database
    let tenants: TenantDirectory
    let outbox: OutboxWriter

    private var store: AdminStore { AdminStore(logger: database.logger) }
    private var clients: ClientRepository { ClientRepository(logger: database.logger) }
    private var revocation: ClientRevocation { ClientRevocation(database: database, outbox: outbox) }
    private var upstreamSecrets: UpstreamProviderSecrets {
        UpstreamProviderSecrets(envelope: settings.keyEnvelope, references: settings.upstreamSecretReferences, outbound: settings.outbound)
    }

    func addRoutes(to router: Router<Context>) {
        let admin = router.group("admin")
        admin.post("tenants", use: createTenant)
        admin.get("tenants/:tenant", use: readTenant)
        admin.put("tenants/:tenant/policy", use: updatePolicy)
        admin.post("tenants/:tenant/clients", use: createClient)
        admin.get("tenants/:tenant/clients", use: listClients)
        admin.get("tenants/:tenant/clients/:client_id", use: readClient)
        admin.post("tenants/:tenant/clients/:client_id/revoke", use: revokeClient)
        admin.post("tenants/:tenant/users/:user_id/revoke-clients", use: revokeUserClients)
        admin.post("tenants/:tenant/users/:user_id/disable", use: disableUser)
        admin.post("tenants/:tenant/users/:user_id/enable", use: enableUser)
        admin.post("tenants/:tenant/templates", use: putTemplate)
        admin.put("tenants/:tenant/templates/:software_id", use: putTemplate)
        admin.get("tenants/:tenant/templates", use: listTemplates)
        admin.post("tenants/:tenant/users", use: createUser)
        admin.post("tenants/:tenant/initial-access-tokens", use: createInitialAccessToken)
        admin.delete("tenants/:tenant/initial-access-tokens/:token_id", use: revokeInitialAccessToken)
        admin.get("tenants/:tenant/keys", use: listKeys)
        admin.post("tenants/:tenant/keys/rotate", use: rotateKey)
    }

    // MARK: Tenants

    @Sendable func createTenant(_ request: Request, context: Context) async throws -> Response {
        let json = try await AdminBody.read(request)
        let body = try AdminBody.decode(CreateTenantRequest.self, from: json)
        guard let slug = TenantSlug(rawValue: body.tenantID) else {
            throw OAuthError.invalidRequest("tenant_id must be 1–63 characters of a-z, 0-9 and '-', starting with a letter or digit")
        }
        let (actor, bootstrap) = try await authenticator.actor(request, tenant: slug, bootstrap: .firstTenant)
        if bootstrap != nil { try await refuseSpentBootstrap() }
        let requestedPolicy = json.members["policy"].flatMap { $0.isNull ? nil : $0 }
        let prepared = try upstreamSecrets.prepare(
            try requestedPolicy.map { try Self.parsePolicy(Data(CanonicalJSON.encode($0))) } ?? TenantPolicy(), tenant: slug.rawValue)
        let policy = prepared.policy
        let displayName = try Self.bounded(body.displayName ?? slug.rawValue, field: "display_name", maximum: 200)
        let logger = database.logger
        let created = try await database.withTenantTransaction(slug.rawValue) { connection in
            if bootstrap != nil {
                // Checked again under the lock: two bootstrap requests at once create one tenant.
                try await store.lockBootstrap(on: connection)
                try await refuseSpentBootstrap()
                if try await systemDatabase.withTransaction({ try await store.anyTenantExists(on: $0) }) {
                    throw OAuthError(.forbidden, "access_denied", "the bootstrap key only creates the first tenant; use an admin token")
                }
            }
            guard try await store.createTenant(slug.rawValue, displayName: displayName, policy: policy, actor: actor.id, on: connection)
            else { return false }
            try await upstreamSecrets.store(prepared, tenant: slug.rawValue, on: connection, logger: logger)
            return true
        }
        guard created else { throw OAuthError(.conflict, "invalid_request", "tenant \(slug.rawValue) already exists") }
        context.logger.info("tenant created", metadata: ["tenant": .string(slug.rawValue), "actor": .string(actor.id)])
        return try AdminBody.response(
            ["tenant_id": slug.rawValue, "display_name": displayName, "status": "active", "policy_version": 1,
             "policy": try AdminBody.object(policy)], status: .created)
    }

    @Sendable func readTenant(_ request: Request, context: Context) async throws -> Response {
        let (tenant, _) = try await authorized(request, context)
        return try AdminBody.response(
            ["tenant_id": tenant.slug.rawValue, "display_name": tenant.displayName, "status": tenant.status,
             "policy_version": tenant.policyVersion, "policy": try AdminBody.object(tenant.policy)])
    }

    @Sendable func updatePolicy(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let slug = tenant.slug.rawValue
        let prepared = try upstreamSecrets.prepare(try Self.parsePolicy(Data(try await AdminBody.read(request).bytes)), tenant: slug)
        let policy = prepared.policy
        let logger = database.logger
        guard let version = try await database.withTenantTransaction(slug, { connection in
            try await upstreamSecrets.store(prepared, tenant: slug, on: connection, logger: logger)
            return try await store.updatePolicy(slug, policy: policy, actor: actor.id, on: connection)
        }) else { throw OAuthError.notFound("unknown tenant") }
        tenants.invalidate(tenant.slug)
        return try AdminBody.response(["tenant_id": tenant.slug.rawValue, "policy_version": version, "policy": try AdminBody.object(policy)])
    }

    /// The bootstrap key stops working once an administrator client exists: from then on administration
    /// needs an admin token, and a leaked bootstrap key is worth nothing.
    private func refuseSpentBootstrap() async throws {
        if try await systemDatabase.withTransaction({ try await store.anyAdminClientExists(on: $0) }) {
            throw OAuthError(
                .forbidden, "access_denied", "the bootstrap key is spent: an administrator client exists; use an admin token")
        }
    }

    // MARK: Clients

    /// A static client (e.g. the tenant's DCR client with scope `dcr`, or an admin client with `admin`):
    /// RFC 7591 metadata, validated like a registration except that reserved scopes may be granted, plus
    /// `first_party` (no consent page for the tenant's own apps), which dynamic registration cannot set.
    @Sendable func createClient(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.tenantSlug(context)
        let (actor, bootstrap) = try await authenticator.actor(request, tenant: slug, bootstrap: .firstClient)
        guard let tenant = try await tenants.tenant(slug) else { throw OAuthError.notFound("unknown tenant") }
        let body = try await AdminBody.read(request)
        let requested = try AdminBody.decode(ClientMetadata.self, from: body)
        // The tenant's own app: its signed-in users are not asked to consent.
        let firstParty = try AdminBody.checked { () throws(JSONRequestBody.Problem) in try body.bool("first_party") } ?? false
        var policy = tenant.policy
        // An administrator may grant any scope (also the reserved `dcr` and `admin`) and grant type;
        // every other registration rule still applies.
        policy.allowedGrantTypes = [.authorizationCode, .refreshToken, .clientCredentials]
        var withoutScope = requested
        withoutScope.scope = nil
        var metadata = try ClientMetadataValidator(policy: policy).validate(withoutScope)
        if let scope = requested.scope {
            let tokens = scope.split(separator: " ")
            guard !tokens.isEmpty, scope.utf8.count <= ClientMetadataValidator.maximumScopeLength,
                  scope.unicodeScalars.allSatisfy({ $0 == " " || (0x21...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\" })
            else { throw RegistrationError.invalidMetadata("scope must be printable ASCII tokens (RFC 6749 §3.3)") }
            metadata.scope = tokens.joined(separator: " ")
        }
        let now = Date()
        let clientID = UUID().uuidString.lowercased()
        let method = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
        let secret = method.usesClientSecret ? SecretTokens.generate(prefix: "lk_cs_") : nil
        let record = ClientRecord(
            clientID: clientID, tenant: slug, clientType: method.clientType, applicationType: metadata.applicationType ?? .web,
            authenticatedUser: nil, templateID: nil, metadata: metadata, secretExpiresAt: nil, createdAt: now, updatedAt: now,
            registrationMechanism: .admin)
        try await database.withTenantTransaction(slug.rawValue) { connection in
            if bootstrap != nil {
                try await store.lockBootstrap(on: connection)
                try await refuseSpentBootstrap()
                if try await store.staticClientCount(slug.rawValue, on: connection) > 0 {
                    throw OAuthError(.forbidden, "access_denied", "the bootstrap key only creates a tenant's first client; use an admin token")
                }
            }
            try await clients.insert(
                record, secretHash: secret.map(settings.secretHasher.hash), registrationTokenHash: nil, kind: "static",
                firstParty: firstParty, on: connection)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: ClientRegistered(record: record, actor: actor)),
                on: connection, logger: database.logger)
        }
        var object = try RegistrationResponse(
            record: record, clientSecret: secret, registrationAccessToken: nil,
            registrationClientURI: settings.registrationClientURI(tenant: slug.rawValue, clientID: clientID)).jsonObject()
        object["registration_client_uri"] = nil
        object["first_party"] = firstParty
        return try AdminBody.response(object, status: .created)
    }

    /// `GET …/clients?user=&status=&software_id=&created_from=&created_to=&limit=&cursor=`: newest first,
    /// `next_cursor` while more follow.
    @Sendable func listClients(_ request: Request, context: Context) async throws -> Response {
        let (tenant, _) = try await authorized(request, context)
        let query = request.uri.queryParameters
        var filters = ClientSearch.Filters()
        if let raw = query["user"].map(String.init) {
            guard let parsed = UUID(uuidString: raw) else { throw OAuthError.invalidRequest("user must be a UUID") }
            filters.userID = parsed
        }
        if let status = query["status"].map(String.init) {
            guard let parsed = ClientStatus(rawValue: status) else { throw OAuthError.invalidRequest("unknown status \(status)") }
            filters.status = parsed
        }
        filters.softwareID = try query["software_id"].map { try Self.bounded(String($0), field: "software_id", maximum: 128) }
        filters.createdFrom = try query["created_from"].map { try Self.timestamp(String($0), field: "created_from") }
        filters.createdBefore = try query["created_to"].map { try Self.timestamp(String($0), field: "created_to") }
        let cursor = try query["cursor"].map { try ClientSearch.Cursor(encoded: String($0)) }
        let limit = try query["limit"].map { raw -> Int in
            guard let value = Int(raw), (1...500).contains(value) else { throw OAuthError.invalidRequest("limit must be 1–500") }
            return value
        } ?? 100
        let body = try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            let page = try await ClientSearch(logger: database.logger).search(
                tenant: tenant.slug.rawValue, filters, after: cursor, limit: limit, on: connection)
            var object: [String: Any] = ["clients": page.clients.map(\.jsonObject)]
            object["next_cursor"] = page.next?.encoded
            return try AdminBody.json(object)
        }
        return AdminBody.response(json: body)
    }

    @Sendable func readClient(_ request: Request, context: Context) async throws -> Response {
        let (tenant, _) = try await authorized(request, context)
        let clientID = try context.parameters.require("client_id")
        guard let stored = try await database.withTenantTransaction(tenant.slug.rawValue, {
            try await clients.find(clientID, tenant: tenant.slug.rawValue, on: $0)
        }) else { throw OAuthError.notFound("unknown client") }
        var object = try RegistrationResponse(
            record: stored.record, clientSecret: nil, registrationAccessToken: nil,
            registrationClientURI: settings.registrationClientURI(tenant: tenant.slug.rawValue, clientID: clientID)).jsonObject()
        object["status"] = stored.record.status.rawValue
        object["authenticated_user"] = stored.record.authenticatedUser?.uuidString.lowercased()
        object["first_party"] = stored.firstParty
        return try AdminBody.response(object)
    }

    /// Revokes a client at once: status `revoked`, refresh tokens dead, `ClientRevoked` (reason `admin`)
    /// for the sidecars — all in one transaction.
    @Sendable func revokeClient(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let clientID = try context.parameters.require("client_id")
        let body = try await AdminBody.read(RevokeClientRequest.self, from: request)
        let detail = try body.reason.map { try Self.bounded($0, field: "reason", maximum: 500) }
        let now = try await revocation.revoke(clientID, tenant: tenant.slug, actor: actor, detail: detail)
        context.logger.info("client revoked", metadata: ["client_id": .string(clientID), "actor": .string(actor.id)])
        return try AdminBody.response(
            ["client_id": clientID, "status": "revoked", "revoked_at": RFC3339Timestamp.string(from: now), "reason": detail ?? "admin"])
    }

    /// Revokes every active client of one user (reason required): one `ClientRevoked` per client, and the
    /// user's sessions, refresh tokens and live access tokens end with them (`TokenRevoked` per client).
    @Sendable func revokeUserClients(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let user = try Self.userID(context)
        let detail = try await Self.requiredReason(request)
        let outcome = try await revocation.revokeAll(of: user, tenant: tenant.slug, actor: actor, detail: detail)
        context.logger.info("user's clients revoked", metadata: ["count": .stringConvertible(outcome.clients.count), "actor": .string(actor.id)])
        return try AdminBody.response(
            ["authenticated_user": user.uuidString.lowercased(), "revoked": outcome.clients, "reason": detail,
             "sessions_ended": outcome.ended.sessions, "refresh_tokens_revoked": outcome.ended.refreshTokens,
             "access_tokens_revoked": outcome.ended.accessTokens])
    }

    /// Disables a user (reason required): sign-in and every grant refuse them, their sessions, refresh tokens
    /// and live access tokens end, and `UserDisabled` tells the sidecars to refuse their tokens; their clients
    /// stay as they are. 409 when the user is already disabled.
    @Sendable func disableUser(_ request: Request, context: Context) async throws -> Response {
        try await setUserStatus(request, context, disabled: true)
    }

    /// Enables a disabled user again (reason required) and emits `UserEnabled`; 409 when not disabled.
    @Sendable func enableUser(_ request: Request, context: Context) async throws -> Response {
        try await setUserStatus(request, context, disabled: false)
    }

    private func setUserStatus(_ request: Request, _ context: Context, disabled: Bool) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let user = try Self.userID(context)
        let reason = try await Self.requiredReason(request)
        let users = UserRevocation(outbox: outbox, logger: database.logger)
        let now = Date()
        let ended = try await database.withTenantTransaction(tenant.slug.rawValue) { connection -> UserRevocation.Outcome in
            guard try await users.setDisabled(disabled, user: user, tenant: tenant.slug, on: connection) else {
                throw OAuthError(.conflict, "invalid_request", disabled ? "the user is already disabled" : "the user is not disabled")
            }
            guard disabled else {
                let event = UserEnabled(tenant: tenant.slug, userID: user, reason: reason, actor: actor, enabledAt: now)
                try await outbox.append(CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: database.logger)
                return UserRevocation.Outcome()
            }
            let ended = try await users.endSessionsAndTokens(of: user, tenant: tenant.slug, actor: actor, detail: reason, at: now, on: connection)
            let event = UserDisabled(tenant: tenant.slug, userID: user, reason: reason, actor: actor, disabledAt: now)
            try await outbox.append(CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: database.logger)
            return ended
        }
        context.logger.info(disabled ? "user disabled" : "user enabled", metadata: ["user_id": .string(user.uuidString.lowercased()), "actor": .string(actor.id)])
        var object: [String: Any] = [
            "user_id": user.uuidString.lowercased(), "status": disabled ? "disabled" : "active", "reason": reason,
            (disabled ? "disabled_at" : "enabled_at"): RFC3339Timestamp.string(from: now),
        ]
        if disabled {
            object["sessions_ended"] = ended.sessions
            object["refresh_tokens_revoked"] = ended.refreshTokens
            object["access_tokens_revoked"] = ended.accessTokens
        }
        return try AdminBody.response(object)
    }

    // MARK: Users

    /// Creates a password user (scrypt) and emits `UserRegistered` (method `admin`) in the same transaction.
    @Sendable func createUser(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let body = try await AdminBody.read(CreateUserRequest.self, from: request)
        let username = try Self.bounded(body.username, field: "username", maximum: 64)
        let email = try body.email.map { try Self.bounded($0, field: "email", maximum: 254) }
        guard body.password.count >= 12, body.password.utf8.count <= 1024, body.password.lowercased() != username.lowercased() else {
            throw OAuthError.invalidRequest("password must have 12–1024 characters and differ from the username")
        }
        let hash: String
        let hasher = settings.passwordHasher, password = body.password
        do { hash = try await settings.hashingLimiter.run { try hasher.hash(password) } } catch let busy as PasswordHashingLimiter.Busy {
            throw OAuthError(
                .serviceUnavailable, "temporarily_unavailable", "password hashing is saturated; retry shortly",
                headers: [.retryAfter: String(busy.retryAfterSeconds)])
        } catch {
            throw OAuthError(.internalServerError, "server_error", "the password could not be hashed")
        }
        let id = UUID()
        try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            guard try await store.createUser(
                tenant.slug.rawValue, id: id, username: username, email: email, emailVerified: email != nil && body.emailVerified == true,
                passwordHash: hash, on: connection)
            else { throw OAuthError(.conflict, "invalid_request", "the username is taken") }
            let event = UserRegistered(tenant: tenant.slug, userID: id, username: username, method: .admin, actor: actor)
            try await outbox.append(CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: database.logger)
        }
        return try AdminBody.response(["user_id": id.uuidString.lowercased(), "username": username], status: .created)
    }

    // MARK: Templates and initial access tokens

    /// Creates or replaces a template; a replaced template's active instances follow it in the same transaction.
    @Sendable func putTemplate(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let body = try await AdminBody.read(TemplateRequest.self, from: request)
        let pathID = context.parameters.get("software_id")
        guard let softwareID = pathID ?? body.softwareID else { throw OAuthError.invalidRequest("software_id is required") }
        if let pathID, let sent = body.softwareID, sent != pathID {
            throw OAuthError.invalidRequest("software_id in the body differs from the path")
        }
        _ = try Self.bounded(softwareID, field: "software_id", maximum: ClientMetadataValidator.maximumIdentifierLength)
        var metadata = body.metadata
        metadata.softwareID = softwareID
        let template = ClientTemplate(
            id: softwareID, tenant: tenant.slug, metadata: try ClientMetadataValidator(policy: tenant.policy).validate(metadata),
            overridableFields: body.overridableFields ?? [], version: 1)
        guard template.unknownOverridableFields.isEmpty else {
            throw OAuthError.invalidRequest("unknown overridable fields: \(template.unknownOverridableFields.joined(separator: ", "))")
        }
        let propagation = TemplatePropagation(logger: database.logger, outbox: outbox)
        let (version, updated) = try await database.withTenantTransaction(tenant.slug.rawValue) { connection -> (Int, Int) in
            var stored = template
            stored.version = try await store.upsertTemplate(template, on: connection)
            let updated = try await propagation.propagate(stored, policy: tenant.policy, actor: actor, on: connection)
            return (stored.version, updated)
        }
        return try AdminBody.response(
            ["software_id": softwareID, "version": version, "metadata": try AdminBody.object(template.metadata),
             "overridable_fields": template.overridableFields, "instances_updated": updated],
            status: pathID == nil ? .created : .ok)
    }

    @Sendable func listTemplates(_ request: Request, context: Context) async throws -> Response {
        let (tenant, _) = try await authorized(request, context)
        let body = try await database.withTenantTransaction(tenant.slug.rawValue) {
            try AdminBody.json(["templates": try await store.templates(tenant.slug.rawValue, on: $0)])
        }
        return AdminBody.response(json: body)
    }

    @Sendable func createInitialAccessToken(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try await authorized(request, context)
        let body = try await AdminBody.read(InitialAccessTokenRequest.self, from: request)
        let uses = body.uses ?? 1
        let lifetime = body.expiresIn ?? 86_400
        guard (1...100_000).contains(uses) else { throw OAuthError.invalidRequest("uses must be 1–100000") }
        guard (60...31_536_000).contains(lifetime) else { throw OAuthError.invalidRequest("expires_in must be 60–31536000 seconds") }
        let description = try body.description.map { try Self.bounded($0, field: "description", maximum: 200) }
        let token = SecretTokens.generate(prefix: "lk_iat_")
        let id = UUID()
        let expiresAt = Date().addingTimeInterval(TimeInterval(lifetime))
        try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            try await store.createInitialAccessToken(
                tenant.slug.rawValue, id: id, hash: settings.secretHasher.hash(token), uses: uses, expiresAt: expiresAt,
                description: description, actor: actor.id, on: connection)
        }
        return try AdminBody.response(
            ["token_id": id.uuidString.lowercased(), "initial_access_token": token, "remaining_uses": uses,
             "expires_at": RFC3339Timestamp.string(from: expiresAt)], status: .created)
    }

    @Sendable func revokeInitialAccessToken(_ request: Request, context: Context) async throws -> Response {
        let (tenant, _) = try await authorized(request, context)
        guard let id = UUID(uuidString: try context.parameters.require("token_id")) else { throw OAuthError.notFound("unknown token") }
        guard try await database.withTenantTransaction(tenant.slug.rawValue, {
            try await store.revokeInitialAccessToken(tenant.slug.rawValue, id: id, on: $0)
        }) else { throw OAuthError.notFound("unknown token") }
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    // MARK: Helpers

    /// Authenticates first (so an anonymous caller cannot probe which tenants exist), then resolves the tenant.
    func authorized(_ request: Request, _ context: Context) async throws -> (ResolvedTenant, EventActor) {
        let slug = try Self.tenantSlug(context)
        let (actor, _) = try await authenticator.actor(request, tenant: slug)
        guard let tenant = try await tenants.tenant(slug) else { throw OAuthError.notFound("unknown tenant") }
        return (tenant, actor)
    }

    private static func tenantSlug(_ context: Context) throws -> TenantSlug {
        guard let raw = context.parameters.get("tenant"), let slug = TenantSlug(rawValue: raw) else {
            throw OAuthError.notFound("unknown tenant")
        }
        return slug
    }

    private static func parsePolicy(_ json: Data) throws -> TenantPolicy {
        do { return try TenantPolicy.parse(json) } catch {
            throw OAuthError.invalidRequest("\(error)")
        }
    }

    private static func userID(_ context: Context) throws -> UUID {
        guard let user = UUID(uuidString: try context.parameters.require("user_id")) else { throw OAuthError.notFound("unknown user") }
        return user
    }

    /// The `{"reason": "…"}` body the user-level actions require: 1–500 printable characters.
    private static func requiredReason(_ request: Request) async throws -> String {
        let body = try await AdminBody.read(RevokeClientRequest.self, from: request)
        guard let reason = body.reason else { throw OAuthError.invalidRequest("reason is required") }
        return try bounded(reason, field: "reason", maximum: 500)
    }

    private static func timestamp(_ value: String, field: String) throws -> Date {
        guard let date = RFC3339Timestamp.date(from: value) else { throw OAuthError.invalidRequest("\(field) must be an RFC 3339 timestamp") }
        return date
    }

    static func bounded(_ value: String, field: String, maximum: Int) throws -> String {
        guard !value.isEmpty, value.count <= maximum, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw OAuthError.invalidRequest("\(field) must be 1–\(maximum) printable characters")
        }
        return value
    }
}
