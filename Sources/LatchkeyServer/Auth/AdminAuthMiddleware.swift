import Hummingbird
import LatchkeyCore
import Logging

/// Requires an admin token for the `{tenant}` of the route (see ``AdminTokenVerifier``).
///
/// Runs before tenant resolution, so an unauthenticated caller cannot probe which tenants exist.
/// The admin's identity goes into the request logger (`admin`, `admin_tenant`), never the token.
public struct AdminAuthMiddleware: RouterMiddleware {
    public typealias Context = LatchkeyRequestContext
    public let verifier: AdminTokenVerifier

    public init(verifier: AdminTokenVerifier) {
        self.verifier = verifier
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let raw = context.parameters.get("tenant"), let tenant = TenantSlug(raw) else {
            throw OAuthError.notFound("unknown tenant")
        }
        let authorizations = request.headers[values: .authorization]
        guard authorizations.count <= 1 else {
            throw OAuthError.invalidRequest("more than one Authorization header")
        }
        let principal = try await verifier.verify(authorization: authorizations.first, for: tenant)
        var context = context
        context.logger[metadataKey: "admin"] = .string(principal.subject)
        context.logger[metadataKey: "admin_tenant"] = .string(principal.issuerTenant.rawValue)
        return try await next(request, context)
    }
}
