import Hummingbird
import LatchkeyCore
import Logging

/// Requires an admin for the tenant a request acts on (see ``AdminTokenVerifier``) and puts the
/// ``AdminPrincipal`` in ``LatchkeyRequestContext/admin`` for the handlers.
///
/// Runs before tenant resolution, so an unauthenticated caller cannot probe which tenants exist.
/// The admin's identity goes into the request logger (`admin`, `admin_tenant`), never the token.
public struct AdminAuthMiddleware: RouterMiddleware {
    public typealias Context = LatchkeyRequestContext
    /// Names the tenant a request acts on. It may read the body, buffering it for the handler.
    public typealias TenantLocator = @Sendable (inout Request, Context) async throws -> TenantSlug
    /// A credential accepted in place of an admin token (the gateway's bootstrap key): its principal,
    /// nil when the request does not carry one, an error when it carries a wrong one.
    public typealias AlternativeCredential = @Sendable (Request, TenantSlug) throws -> AdminPrincipal?

    public let verifier: AdminTokenVerifier
    private let locateTenant: TenantLocator
    private let alternative: AlternativeCredential?

    public init(
        verifier: AdminTokenVerifier, tenant: @escaping TenantLocator = Self.pathTenant,
        alternative: AlternativeCredential? = nil
    ) {
        self.verifier = verifier
        self.locateTenant = tenant
        self.alternative = alternative
    }

    /// The `{tenant}` path parameter; a malformed slug is an unknown tenant.
    public static let pathTenant: TenantLocator = { _, context in
        guard let raw = context.parameters.get("tenant"), let tenant = TenantSlug(raw) else {
            throw OAuthError.notFound("unknown tenant")
        }
        return tenant
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var request = request
        let tenant = try await locateTenant(&request, context)
        let authorizations = request.headers[values: .authorization]
        guard authorizations.count <= 1 else {
            throw OAuthError.invalidRequest("more than one Authorization header")
        }
        let principal: AdminPrincipal
        if let alternate = try alternative?(request, tenant) {
            principal = alternate
        } else {
            principal = try await verifier.verify(authorization: authorizations.first, for: tenant)
        }
        var context = context
        context.admin = principal
        context.logger[metadataKey: "admin"] = .string(principal.subject)
        context.logger[metadataKey: "admin_tenant"] = .string(principal.issuerTenant.rawValue)
        return try await next(request, context)
    }
}
