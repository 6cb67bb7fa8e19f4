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
///
/// Every route runs behind ``AdminAuthMiddleware`` (authenticated first, so an anonymous caller cannot
/// probe which tenants exist) and, below `/admin/tenants/{tenant}`, ``TenantResolverMiddleware``
/// (suspended tenants are still administered).
struct AdminController: Sendable {
    typealias Context = LatchkeyRequestContext

    let settings: GatewaySettings
    let verifier: AdminTokenVerifier
    let database: Database
    let systemDatabase: Database
    let tenants: TenantDirectory
    let outbox: OutboxWriter

    var revocation: ClientRevocation { ClientRevocation(database: database, outbox: outbox) }
    private var upstreamSecrets: UpstreamProviderSecrets {
        UpstreamProviderSecrets(
            envelope: settings.keyEnvelope, references: settings.upstreamSecretReferences, outbound: settings.outbound)
    }

    func addRoutes(to router: Router<Context>) {
        // The bootstrap key creates the first tenant and its first client; the handlers refuse it otherwise.
        let bootstrap = BootstrapKey(key: settings.adminBootstrapKey)
        router.group("admin")
            .add(
                middleware: AdminAuthMiddleware(
                    verifier: verifier, tenant: CreateTenantRequest.tenant, alternative: bootstrap.principal)
            )
            .post("tenants", use: createTenant)
        // Listing every tenant is for platform admins: the token must be valid for the platform tenant.
        let platform = settings.platformTenant
        router.group("admin")
            .add(
                middleware: AdminAuthMiddleware(
                    verifier: verifier,
                    tenant: { _, _ in
                        guard let platform else {
                            throw OAuthError.notFound("listing tenants needs a platform tenant (PLATFORM_TENANT)")
                        }
                        return platform
                    })
            )
            .get("tenants", use: listTenants)
        tenantGroup(router, alternative: bootstrap.principal)
            .post("clients", use: createClient)
        let admin = tenantGroup(router)
        admin.get(use: readTenant)
        admin.put("policy", use: updatePolicy)
        admin.get("clients", use: listClients)
        admin.get("clients/:client_id", use: readClient)
        admin.post("clients/:client_id/revoke", use: revokeClient)
        admin.post("clients/:client_id/rotate-secret", use: rotateSecret)
        admin.post("users/:user_id/revoke-clients", use: revokeUserClients)
        admin.post("users/:user_id/disable", use: disableUser)
        admin.post("users/:user_id/enable", use: enableUser)
        admin.post("templates", use: putTemplate)
        admin.put("templates/:software_id", use: putTemplate)
        admin.get("templates", use: listTemplates)
        admin.post("users", use: createUser)
        admin.get("users", use: listUsers)
        admin.delete("users/:user_id", use: deleteUser)
        admin.post("users/:user_id/password", use: resetPassword)
        admin.post("initial-access-tokens", use: createInitialAccessToken)
        admin.delete("initial-access-tokens/:token_id", use: revokeInitialAccessToken)
        admin.get("keys", use: listKeys)
        admin.post("keys/rotate", use: rotateKey)
    }

    /// `/admin/tenants/{tenant}`: the caller authenticated first, then the tenant resolved.
    private func tenantGroup(
        _ router: Router<Context>, alternative: AdminAuthMiddleware.AlternativeCredential? = nil
    ) -> RouterGroup<Context> {
        router.group("admin/tenants/:tenant")
            .add(middleware: AdminAuthMiddleware(verifier: verifier, alternative: alternative))
            .add(middleware: TenantResolverMiddleware(directory: tenants, admitsSuspended: true))
    }

    // MARK: Tenants

    @Sendable func createTenant(_ request: Request, context: Context) async throws -> EditedResponse<TenantView> {
        let admin = try context.requireAdmin()
        let actor = admin.actor
        let json = try await AdminBody.read(request)
        let (body, slug) = try CreateTenantRequest.parse(json)
        let bootstrap = admin.credential == .bootstrapKey
        if bootstrap { try await refuseSpentBootstrap() }
        let requestedPolicy = json.members["policy"].flatMap { $0.isNull ? nil : $0 }
        let prepared = try upstreamSecrets.prepare(
            try requestedPolicy.map { try Self.parsePolicy(Data(CanonicalJSON.encode($0))) } ?? TenantPolicy(),
            tenant: slug.rawValue)
        let policy = prepared.policy
        let displayName = try Self.bounded(body.displayName ?? slug.rawValue, field: "display_name", maximum: 200)
        let logger = database.logger
        let created = try await database.withTenantTransaction(slug.rawValue) { connection in
            if bootstrap {
                // Checked again under the lock: two bootstrap requests at once create one tenant.
                try await AdminStore.lockBootstrap(on: connection, logger: logger)
                try await refuseSpentBootstrap()
                if try await systemDatabase.withTransaction({
                    try await AdminStore.anyTenantExists(on: $0, logger: logger)
                }) {
                    throw OAuthError(
                        .forbidden, "access_denied",
                        "the bootstrap key only creates the first tenant; use an admin token")
                }
            }
            guard
                try await AdminStore.createTenant(
                    slug.rawValue, displayName: displayName, policy: policy, actor: actor.id, on: connection,
                    logger: logger)
            else { return false }
            try await upstreamSecrets.store(prepared, tenant: slug.rawValue, on: connection, logger: logger)
            return true
        }
        guard created else { throw OAuthError(.conflict, "invalid_request", "tenant \(slug.rawValue) already exists") }
        // A lookup just before (e.g. an import checking whether the tenant exists) cached it as unknown.
        tenants.invalidate(slug)
        context.logger.info("tenant created", metadata: ["tenant": .string(slug.rawValue), "actor": .string(actor.id)])
        return EditedResponse(
            status: .created,
            response: TenantView(
                tenantID: slug.rawValue, displayName: displayName, status: "active", policyVersion: 1, policy: policy))
    }

    /// Every tenant, by id, for a platform admin (the only admins whose token this route accepts).
    @Sendable func listTenants(_ request: Request, context: Context) async throws -> TenantListView {
        guard try context.requireAdmin().isPlatformAdmin else {
            throw OAuthError(.forbidden, "access_denied", "listing tenants needs a platform admin")
        }
        let logger = database.logger
        return TenantListView(
            tenants: try await systemDatabase.withTransaction { try await AdminStore.tenants(on: $0, logger: logger) })
    }

    @Sendable func readTenant(_ request: Request, context: Context) async throws -> TenantView {
        let tenant = try context.requireTenant()
        return TenantView(
            tenantID: tenant.id, displayName: tenant.displayName, status: tenant.status,
            policyVersion: tenant.policyVersion,
            policy: tenant.policy)
    }

    @Sendable func updatePolicy(_ request: Request, context: Context) async throws -> TenantPolicyView {
        let (tenant, actor) = try authorized(context)
        let slug = tenant.slug.rawValue
        let prepared = try upstreamSecrets.prepare(
            try Self.parsePolicy(Data(try await AdminBody.read(request).bytes)), tenant: slug, previous: tenant.policy)
        let policy = prepared.policy
        let logger = database.logger
        guard
            let version = try await database.withTenantTransaction(
                slug,
                { connection in
                    try await upstreamSecrets.store(prepared, tenant: slug, on: connection, logger: logger)
                    return try await AdminStore.updatePolicy(
                        slug, policy: policy, actor: actor.id, on: connection, logger: logger)
                })
        else { throw OAuthError.notFound("unknown tenant") }
        tenants.invalidate(tenant.slug)
        return TenantPolicyView(tenantID: slug, policyVersion: version, policy: policy)
    }

    /// The bootstrap key stops working once an administrator client exists: from then on administration
    /// needs an admin token, and a leaked bootstrap key is worth nothing.
    private func refuseSpentBootstrap() async throws {
        let logger = database.logger
        if try await systemDatabase.withTransaction({
            try await AdminStore.anyAdminClientExists(on: $0, logger: logger)
        }) {
            throw OAuthError(
                .forbidden, "access_denied",
                "the bootstrap key is spent: an administrator client exists; use an admin token")
        }
    }

    // MARK: Clients

    /// A static client (e.g. the tenant's DCR client with scope `dcr`, or an admin client with `admin`):
    /// RFC 7591 metadata, validated like a registration except that reserved scopes may be granted, plus
    /// `first_party` (no consent page for the tenant's own apps), which dynamic registration cannot set.
    @Sendable func createClient(_ request: Request, context: Context) async throws -> EditedResponse<AdminClientView> {
        let (tenant, actor) = try authorized(context)
        let slug = tenant.slug
        let bootstrap = try context.requireAdmin().credential == .bootstrapKey
        let body = try await AdminBody.read(request)
        let requested = try AdminBody.decode(ClientMetadata.self, from: body)
        // The tenant's own app: its signed-in users are not asked to consent.
        let firstParty =
            try AdminBody.checked { () throws(JSONRequestBody.Problem) in try body.bool("first_party") } ?? false
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
                scope.unicodeScalars.allSatisfy({
                    $0 == " " || (0x21...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\"
                })
            else { throw RegistrationError.invalidMetadata("scope must be printable ASCII tokens (RFC 6749 §3.3)") }
            metadata.scope = tokens.joined(separator: " ")
        }
        let now = Date()
        let clientID = UUID().uuidString.lowercased()
        let method = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
        let secret = method.usesClientSecret ? SecretTokens.generate(prefix: "lk_cs_") : nil
        let record = ClientRecord(
            clientID: clientID, tenant: slug, clientType: method.clientType,
            applicationType: metadata.applicationType ?? .web,
            authenticatedUser: nil, templateID: nil, metadata: metadata, secretExpiresAt: nil, createdAt: now,
            updatedAt: now,
            registrationMechanism: .admin)
        let logger = database.logger
        try await database.withTenantTransaction(slug.rawValue) { connection in
            if bootstrap {
                try await AdminStore.lockBootstrap(on: connection, logger: logger)
                try await refuseSpentBootstrap()
                if try await AdminStore.staticClientCount(slug.rawValue, on: connection, logger: logger) > 0 {
                    throw OAuthError(
                        .forbidden, "access_denied",
                        "the bootstrap key only creates a tenant's first client; use an admin token")
                }
            }
            try await ClientRepository.insert(
                record, secretHash: secret.map(settings.secretHasher.hash), registrationTokenHash: nil, kind: "static",
                firstParty: firstParty, on: connection, logger: logger)
            try await outbox.append(
                CloudEvent(
                    source: EventSource.registrationGateway, data: ClientRegistered(record: record, actor: actor)),
                on: connection, logger: database.logger)
        }
        // A static client has no registration access token: it is not managed through RFC 7592.
        let registration = RegistrationResponse(record: record, clientSecret: secret, registrationAccessToken: nil)
        return EditedResponse(
            status: .created, response: AdminClientView(registration: registration, firstParty: firstParty))
    }

    /// `GET …/clients?user=&status=&software_id=&created_from=&created_to=&limit=&cursor=`: newest first,
    /// `next_cursor` while more follow.
    @Sendable func listClients(_ request: Request, context: Context) async throws -> ClientListView {
        let tenant = try context.requireTenant()
        let query = request.uri.queryParameters
        var filters = ClientSearch.Filters()
        if let raw = query["user"].map(String.init) {
            guard let parsed = UUID(uuidString: raw) else { throw OAuthError.invalidRequest("user must be a UUID") }
            filters.userID = parsed
        }
        if let status = query["status"].map(String.init) {
            guard let parsed = ClientStatus(rawValue: status) else {
                throw OAuthError.invalidRequest("unknown status \(status)")
            }
            filters.status = parsed
        }
        filters.softwareID = try query["software_id"].map {
            try Self.bounded(String($0), field: "software_id", maximum: 128)
        }
        filters.createdFrom = try query["created_from"].map { try Self.timestamp(String($0), field: "created_from") }
        filters.createdBefore = try query["created_to"].map { try Self.timestamp(String($0), field: "created_to") }
        let cursor = try query["cursor"].map { try ClientSearch.Cursor(encoded: String($0)) }
        let limit =
            try query["limit"].map { raw -> Int in
                guard let value = Int(raw), (1...500).contains(value) else {
                    throw OAuthError.invalidRequest("limit must be 1–500")
                }
                return value
            } ?? 100
        let logger = database.logger
        let page = try await database.withTenantTransaction(tenant.id) { connection in
            try await ClientSearch.search(
                tenant: tenant.id, filters, after: cursor, limit: limit, on: connection, logger: logger)
        }
        return ClientListView(clients: page.clients, nextCursor: page.next?.encoded)
    }

    @Sendable func readClient(_ request: Request, context: Context) async throws -> AdminClientView {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        let logger = database.logger
        guard
            let stored = try await database.withTenantTransaction(
                tenant.id,
                {
                    try await ClientRepository.find(clientID, tenant: tenant.id, on: $0, logger: logger)
                })
        else { throw OAuthError.notFound("unknown client") }
        let registration = RegistrationResponse(
            record: stored.record, clientSecret: nil, registrationAccessToken: nil,
            registrationClientURI: settings.registrationClientURI(tenant: tenant.id, clientID: clientID))
        return AdminClientView(
            registration: registration, status: stored.record.status,
            authenticatedUser: stored.record.authenticatedUser,
            firstParty: stored.firstParty)
    }

    /// Revokes a client at once: status `revoked`, refresh tokens dead, `ClientRevoked` (reason `admin`)
    /// for the sidecars — all in one transaction.
    @Sendable func revokeClient(_ request: Request, context: Context) async throws -> ClientRevokedView {
        let (tenant, actor) = try authorized(context)
        let clientID = try context.parameters.require("client_id")
        let body = try await AdminBody.read(RevokeClientRequest.self, from: request)
        let detail = try body.reason.map { try Self.bounded($0, field: "reason", maximum: 500) }
        let now = try await revocation.revoke(clientID, tenant: tenant.slug, actor: actor, detail: detail)
        context.logger.info("client revoked", metadata: ["client_id": .string(clientID), "actor": .string(actor.id)])
        return ClientRevokedView(clientID: clientID, revokedAt: now, reason: detail ?? "admin")
    }

    /// Issues an active client that authenticates with a secret a new one (shown once); the old secret keeps
    /// working for the policy's `client_secret_overlap`. `ClientUpdated` names the rotation, never a secret.
    @Sendable func rotateSecret(_ request: Request, context: Context) async throws -> SecretRotatedView {
        let (tenant, actor) = try authorized(context)
        let clientID = try context.parameters.require("client_id")
        let hasher = settings.secretHasher
        let logger = database.logger
        let (client, rotated) = try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            guard
                var stored = try await ClientRepository.find(
                    clientID, tenant: tenant.slug.rawValue, forUpdate: true, on: connection, logger: logger),
                stored.record.status.isActive
            else { throw OAuthError.notFound("no active client with this id in this tenant") }
            guard stored.clientSecretHash != nil else {
                throw OAuthError.invalidRequest("this client does not authenticate with a client secret")
            }
            let rotated = try await ClientSecretRotation.rotate(
                &stored, policy: tenant.policy, hasher: hasher, at: Date(), on: connection, logger: logger)
            let event = ClientUpdated(
                tenant: tenant.slug, clientID: clientID, changedFields: [], secretRotated: true,
                authenticatedUser: stored.record.authenticatedUser, templateID: stored.record.templateID, actor: actor)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: logger)
            return (stored.record, rotated)
        }
        context.logger.info(
            "client secret rotated", metadata: ["client_id": .string(clientID), "actor": .string(actor.id)])
        return SecretRotatedView(
            clientID: client.clientID, clientSecret: rotated.secret,
            clientSecretExpiresAt: client.clientSecretExpiresAtEpochSeconds,
            previousSecretExpiresAt: rotated.previousValidUntil)
    }

    /// Revokes every active client of one user (reason required): one `ClientRevoked` per client, and the
    /// user's sessions, refresh tokens and live access tokens end with them (`TokenRevoked` per client).
    @Sendable func revokeUserClients(_ request: Request, context: Context) async throws -> UserClientsRevokedView {
        let (tenant, actor) = try authorized(context)
        let user = try Self.userID(context)
        let detail = try await Self.requiredReason(request)
        let outcome = try await revocation.revokeAll(of: user, tenant: tenant.slug, actor: actor, detail: detail)
        context.logger.info(
            "user's clients revoked",
            metadata: ["count": .stringConvertible(outcome.clients.count), "actor": .string(actor.id)])
        return UserClientsRevokedView(
            authenticatedUser: user.uuidString.lowercased(), revoked: outcome.clients, reason: detail,
            sessionsEnded: outcome.ended.sessions, refreshTokensRevoked: outcome.ended.refreshTokens,
            accessTokensRevoked: outcome.ended.accessTokens)
    }

    /// Disables a user (reason required): sign-in and every grant refuse them, their sessions, refresh tokens
    /// and live access tokens end, and `UserDisabled` tells the sidecars to refuse their tokens; their clients
    /// stay as they are. 409 when the user is already disabled.
    @Sendable func disableUser(_ request: Request, context: Context) async throws -> UserStatusView {
        try await setUserStatus(request, context, disabled: true)
    }

    /// Enables a disabled user again (reason required) and emits `UserEnabled`; 409 when not disabled.
    @Sendable func enableUser(_ request: Request, context: Context) async throws -> UserStatusView {
        try await setUserStatus(request, context, disabled: false)
    }

    private func setUserStatus(_ request: Request, _ context: Context, disabled: Bool) async throws -> UserStatusView {
        let (tenant, actor) = try authorized(context)
        let user = try Self.userID(context)
        let reason = try await Self.requiredReason(request)
        let users = UserRevocation(outbox: outbox)
        let logger = database.logger
        let now = Date()
        let ended = try await database.withTenantTransaction(tenant.slug.rawValue) {
            connection -> UserRevocation.Outcome in
            guard try await users.setDisabled(disabled, user: user, tenant: tenant.slug, on: connection, logger: logger)
            else {
                throw OAuthError(
                    .conflict, "invalid_request", disabled ? "the user is already disabled" : "the user is not disabled"
                )
            }
            guard disabled else {
                let event = UserEnabled(tenant: tenant.slug, userID: user, reason: reason, actor: actor, enabledAt: now)
                try await outbox.append(
                    CloudEvent(source: EventSource.registrationGateway, data: event), on: connection,
                    logger: database.logger)
                return UserRevocation.Outcome()
            }
            let ended = try await users.endSessionsAndTokens(
                of: user, tenant: tenant.slug, actor: actor, detail: reason, at: now, on: connection, logger: logger)
            let event = UserDisabled(tenant: tenant.slug, userID: user, reason: reason, actor: actor, disabledAt: now)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection,
                logger: database.logger)
            BusinessMetrics.revoked(event)
            return ended
        }
        context.logger.info(
            disabled ? "user disabled" : "user enabled",
            metadata: ["user_id": .string(user.uuidString.lowercased()), "actor": .string(actor.id)])
        return UserStatusView(
            userID: user.uuidString.lowercased(), disabled: disabled, reason: reason, changedAt: now,
            ended: disabled ? ended : nil)
    }

    // MARK: Users

    /// Creates a password user (scrypt) and emits `UserRegistered` (method `admin`) in the same transaction.
    @Sendable func createUser(_ request: Request, context: Context) async throws -> EditedResponse<UserCreatedView> {
        let (tenant, actor) = try authorized(context)
        let body = try await AdminBody.read(CreateUserRequest.self, from: request)
        let username = try Self.bounded(body.username, field: "username", maximum: 64)
        let email = try body.email.map { try Self.bounded($0, field: "email", maximum: 254) }
        try tenant.policy.passwordPolicy.require(body.password, username: username)
        let hash = try await hashPassword(body.password)
        let id = UUID()
        let logger = database.logger
        try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            guard
                try await AdminStore.createUser(
                    tenant.slug.rawValue, id: id, username: username, email: email,
                    emailVerified: email != nil && body.emailVerified == true,
                    passwordHash: hash, on: connection, logger: logger)
            else { throw OAuthError(.conflict, "invalid_request", "the username is taken") }
            let event = UserRegistered(
                tenant: tenant.slug, userID: id, username: username, method: .admin, actor: actor)
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection,
                logger: database.logger)
        }
        return EditedResponse(
            status: .created, response: UserCreatedView(userID: id.uuidString.lowercased(), username: username))
    }

    /// Sets a user's password (the tenant's password policy applies) and records `UserPasswordChanged` in the
    /// same transaction. Sessions and tokens stay: revoking them is its own decision (`revoke-clients`, `disable`).
    @Sendable func resetPassword(_ request: Request, context: Context) async throws -> Response {
        let (tenant, actor) = try authorized(context)
        let user = try Self.userID(context)
        let body = try await AdminBody.read(ResetPasswordRequest.self, from: request)
        let logger = database.logger
        guard
            let username = try await database.withTenantTransaction(
                tenant.slug.rawValue,
                { connection in
                    try await AdminStore.username(of: user, on: connection, logger: logger)
                })
        else { throw OAuthError.notFound("no such user in this tenant") }
        try tenant.policy.passwordPolicy.require(body.password, username: username)
        let hash = try await hashPassword(body.password)
        try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            guard try await AdminStore.setPassword(of: user, hash: hash, on: connection, logger: logger) else {
                throw OAuthError.notFound("no such user in this tenant")
            }
            let event = UserPasswordChanged(
                tenant: tenant.slug, userID: user, method: .adminReset, actor: actor, changedAt: Date())
            try await outbox.append(
                CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: logger)
        }
        logger.info("password reset by an administrator", metadata: ["user": "\(user)", "actor": "\(actor.id)"])
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    /// scrypt in a hashing slot; a saturated limiter is 503 with `Retry-After`.
    private func hashPassword(_ password: String) async throws -> String {
        let hasher = settings.passwordHasher
        do { return try await settings.hashingLimiter.run { try hasher.hash(password) } } catch let busy
            as PasswordHashingLimiter.Busy
        {
            throw OAuthError(
                .serviceUnavailable, "temporarily_unavailable", "password hashing is saturated; retry shortly",
                headers: [.retryAfter: String(busy.retryAfterSeconds)])
        } catch {
            throw OAuthError(.internalServerError, "server_error", "the password could not be hashed")
        }
    }

    // MARK: Templates and initial access tokens

    /// Creates or replaces a template; a replaced template's active instances follow it in the same transaction.
    @Sendable func putTemplate(_ request: Request, context: Context) async throws -> EditedResponse<TemplateStoredView>
    {
        let (tenant, actor) = try authorized(context)
        let body = try await AdminBody.read(TemplateRequest.self, from: request)
        let pathID = context.parameters.get("software_id")
        guard let softwareID = pathID ?? body.softwareID else {
            throw OAuthError.invalidRequest("software_id is required")
        }
        if let pathID, let sent = body.softwareID, sent != pathID {
            throw OAuthError.invalidRequest("software_id in the body differs from the path")
        }
        _ = try Self.bounded(softwareID, field: "software_id", maximum: ClientMetadataValidator.maximumIdentifierLength)
        var metadata = body.metadata
        metadata.softwareID = softwareID
        let template = ClientTemplate(
            id: softwareID, tenant: tenant.slug,
            metadata: try ClientMetadataValidator(policy: tenant.policy).validate(metadata),
            overridableFields: body.overridableFields ?? [], version: 1)
        guard template.unknownOverridableFields.isEmpty else {
            throw OAuthError.invalidRequest(
                "unknown overridable fields: \(template.unknownOverridableFields.joined(separator: ", "))")
        }
        let propagation = TemplatePropagation(outbox: outbox)
        let logger = database.logger
        let (version, updated) = try await database.withTenantTransaction(tenant.slug.rawValue) {
            connection -> (Int, Int) in
            var stored = template
            stored.version = try await AdminStore.upsertTemplate(template, on: connection, logger: logger)
            let updated = try await propagation.propagate(
                stored, policy: tenant.policy, actor: actor, on: connection, logger: logger)
            return (stored.version, updated)
        }
        let view = TemplateView(
            softwareID: softwareID, version: version, metadata: template.metadata,
            overridableFields: template.overridableFields)
        return EditedResponse(
            status: pathID == nil ? .created : .ok,
            response: TemplateStoredView(template: view, instancesUpdated: updated))
    }

    @Sendable func listTemplates(_ request: Request, context: Context) async throws -> TemplateListView {
        let tenant = try context.requireTenant()
        let logger = database.logger
        return TemplateListView(
            templates: try await database.withTenantTransaction(tenant.id) {
                try await AdminStore.templates(tenant.id, on: $0, logger: logger)
            })
    }

    @Sendable func createInitialAccessToken(_ request: Request, context: Context) async throws -> EditedResponse<
        InitialAccessTokenView
    > {
        let (tenant, actor) = try authorized(context)
        let body = try await AdminBody.read(InitialAccessTokenRequest.self, from: request)
        let uses = body.uses ?? 1
        let lifetime = body.expiresIn ?? 86_400
        guard (1...100_000).contains(uses) else { throw OAuthError.invalidRequest("uses must be 1–100000") }
        guard (60...31_536_000).contains(lifetime) else {
            throw OAuthError.invalidRequest("expires_in must be 60–31536000 seconds")
        }
        let description = try body.description.map { try Self.bounded($0, field: "description", maximum: 200) }
        let token = SecretTokens.generate(prefix: "lk_iat_")
        let id = UUID()
        let expiresAt = Date().addingTimeInterval(TimeInterval(lifetime))
        let logger = database.logger
        try await database.withTenantTransaction(tenant.slug.rawValue) { connection in
            try await AdminStore.createInitialAccessToken(
                tenant.slug.rawValue, id: id, hash: settings.secretHasher.hash(token), uses: uses, expiresAt: expiresAt,
                description: description, actor: actor.id, on: connection, logger: logger)
        }
        return EditedResponse(
            status: .created,
            response: InitialAccessTokenView(
                tokenID: id.uuidString.lowercased(), initialAccessToken: token, remainingUses: uses,
                expiresAt: expiresAt))
    }

    @Sendable func revokeInitialAccessToken(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant()
        guard let id = UUID(uuidString: try context.parameters.require("token_id")) else {
            throw OAuthError.notFound("unknown token")
        }
        let logger = database.logger
        guard
            try await database.withTenantTransaction(
                tenant.id,
                {
                    try await AdminStore.revokeInitialAccessToken(tenant.id, id: id, on: $0, logger: logger)
                })
        else { throw OAuthError.notFound("unknown token") }
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    // MARK: Helpers

    /// The tenant the middleware resolved and the admin acting on it, for handlers that record a change.
    func authorized(_ context: Context) throws -> (ResolvedTenant, EventActor) {
        (try context.requireTenant(), try context.requireAdmin().actor)
    }

    private static func parsePolicy(_ json: Data) throws -> TenantPolicy {
        do { return try TenantPolicy.parse(json) } catch {
            throw OAuthError.invalidRequest("\(error)")
        }
    }

    private static func userID(_ context: Context) throws -> UUID {
        guard let user = UUID(uuidString: try context.parameters.require("user_id")) else {
            throw OAuthError.notFound("unknown user")
        }
        return user
    }

    /// The `{"reason": "…"}` body the user-level actions require: 1–500 printable characters.
    private static func requiredReason(_ request: Request) async throws -> String {
        let body = try await AdminBody.read(RevokeClientRequest.self, from: request)
        guard let reason = body.reason else { throw OAuthError.invalidRequest("reason is required") }
        return try bounded(reason, field: "reason", maximum: 500)
    }

    private static func timestamp(_ value: String, field: String) throws -> Date {
        guard let date = RFC3339Timestamp.date(from: value) else {
            throw OAuthError.invalidRequest("\(field) must be an RFC 3339 timestamp")
        }
        return date
    }

    static func bounded(_ value: String, field: String, maximum: Int) throws -> String {
        guard !value.isEmpty, value.count <= maximum,
            !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw OAuthError.invalidRequest("\(field) must be 1–\(maximum) printable characters")
        }
        return value
    }
}
