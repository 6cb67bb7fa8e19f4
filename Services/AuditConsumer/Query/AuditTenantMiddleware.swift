import Hummingbird
import LatchkeyCore
import LatchkeyServer
import Logging

/// Resolves `{tenant}` for the audit API: like ``TenantResolverMiddleware`` but suspended tenants
/// stay readable — a suspended tenant is exactly one whose history a security team may need.
struct AuditTenantMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    let directory: TenantDirectory

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let raw = context.parameters.get("tenant"), let slug = TenantSlug(raw),
            let tenant = try await directory.tenant(slug)
        else {
            throw OAuthError.notFound("unknown tenant")
        }
        var context = context
        context.tenant = tenant
        context.logger[metadataKey: "tenant"] = .string(tenant.id)
        return try await next(request, context)
    }
}
