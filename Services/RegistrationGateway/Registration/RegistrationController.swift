import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// Routes of RFC 7591 (`POST /t/{tenant}/register`) and RFC 7592 (`GET|PUT|DELETE …/register/{client_id}`).
struct RegistrationController: Sendable {
    typealias Context = LatchkeyRequestContext

    let registration: RegistrationService
    let configuration: ClientConfigurationService
    let rateLimiter: RegistrationRateLimiter
    let clientAddresses: ClientAddressResolver

    func addRoutes(to group: RouterGroup<Context>) {
        let routes = group.group().add(middleware: RegistrationCORSMiddleware())
        routes.post("register", use: register)
        routes.get("register/:client_id", use: read)
        routes.put("register/:client_id", use: update)
        routes.delete("register/:client_id", use: delete)
        routes.on("register", method: .options) { request, context in
            try RegistrationCORS.preflight(request, context: context, methods: [.post])
        }
        routes.on("register/:client_id", method: .options) { request, context in
            try RegistrationCORS.preflight(request, context: context, methods: [.get, .put, .delete])
        }
    }

    @Sendable func register(_ request: Request, context: Context) async throws -> EditedResponse<RegistrationResponse> {
        let tenant = try context.requireTenant()
        do {
            let response = try await registerClient(request, context: context, tenant: tenant)
            BusinessMetrics.registration(tenant: tenant.slug.rawValue, outcome: "registered")
            return response
        } catch let error as OAuthError {
            BusinessMetrics.registration(tenant: tenant.slug.rawValue, outcome: error.code)
            throw error
        } catch {
            BusinessMetrics.registration(tenant: tenant.slug.rawValue, outcome: "error")
            throw error
        }
    }

    private func registerClient(_ request: Request, context: Context, tenant: ResolvedTenant) async throws
        -> EditedResponse<RegistrationResponse>
    {
        // Every request is counted, so floods of bad tokens or bodies are throttled too. Forwarded-for
        // headers count only from TRUSTED_PROXIES: from anyone else they are whatever the client wants.
        let source = clientAddresses.clientAddress(request, context: context)
        let open = request.headers[.authorization] == nil
        let caller: RegistrationService.Caller
        let idempotencyKey: IdempotencyKey?
        let body: RegistrationRequestBody
        do {
            caller = try await registration.authenticate(request, tenant: tenant)
            idempotencyKey = try IdempotencyKey.from(request)
            body = try await RegistrationRequestBody.read(request)
        } catch {
            // Counted all the same, and over the limit the answer is 429 whatever else is wrong.
            try await rateLimiter.enforce(tenant: tenant, source: source, open: open)
            throw error
        }
        // The common registration counts itself in its one statement; the rest is counted here first.
        var counted = false
        if idempotencyKey == nil {
            switch try await registration.registerInOneStatement(
                body, caller: caller, tenant: tenant, source: source, open: open)
            {
            case .registered(let response): return EditedResponse(status: .created, response: response)
            case .counted: counted = true
            case .notAttempted: break
            }
        }
        if !counted { try await rateLimiter.enforce(tenant: tenant, source: source, open: open) }
        return EditedResponse(
            status: .created,
            response: try await registration.register(
                body, caller: caller, tenant: tenant, source: source, idempotencyKey: idempotencyKey))
    }

    @Sendable func read(_ request: Request, context: Context) async throws -> RegistrationResponse {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        return try await configuration.read(clientID, token: BearerToken.extract(from: request), tenant: tenant)
    }

    @Sendable func update(_ request: Request, context: Context) async throws -> RegistrationResponse {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        let token = try BearerToken.extract(from: request)
        let body = try await RegistrationRequestBody.read(request)
        return try await configuration.update(
            clientID, token: token, request: body.metadata, sentClientID: body.credentials.clientID,
            sentSecret: body.credentials.clientSecret, tenant: tenant)
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        try await configuration.delete(clientID, token: BearerToken.extract(from: request), tenant: tenant)
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }
}
