import Hummingbird
import Shared

/// Routes of RFC 7591 (`POST /t/{tenant}/register`) and RFC 7592 (`GET|PUT|DELETE …/register/{client_id}`).
struct RegistrationController: Sendable {
    typealias Context = LatchkeyRequestContext

    let registration: RegistrationService
    let configuration: ClientConfigurationService

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("register", use: register)
        group.get("register/:client_id", use: read)
        group.put("register/:client_id", use: update)
        group.delete("register/:client_id", use: delete)
    }

    @Sendable func register(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant()
        let caller = try await registration.authenticate(token: BearerToken.extract(from: request), tenant: tenant)
        let body = try await RegistrationRequestBody.read(request)
        return try await registration.register(body.metadata, caller: caller, tenant: tenant).response(status: .created)
    }

    @Sendable func read(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        return try await configuration.read(clientID, token: BearerToken.extract(from: request), tenant: tenant)
            .response(status: .ok)
    }

    @Sendable func update(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        let token = try BearerToken.extract(from: request)
        let body = try await RegistrationRequestBody.read(request)
        return try await configuration.update(
            clientID, token: token, request: body.metadata, sentClientID: body.credentials.clientID,
            sentSecret: body.credentials.clientSecret, tenant: tenant
        ).response(status: .ok)
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant()
        let clientID = try context.parameters.require("client_id")
        try await configuration.delete(clientID, token: BearerToken.extract(from: request), tenant: tenant)
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }
}
