import Hummingbird
import NIOCore

/// The request context every Latchkey service uses: 64 KiB decode limit, peer address, resolved
/// tenant, verified admin, Latchkey's JSON for `ResponseEncodable` answers.
public struct LatchkeyRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer; used for per-source throttling and for trusting proxy headers.
    public let remoteAddress: SocketAddress?
    /// Set by ``TenantResolverMiddleware`` on `/t/{tenant}` routes.
    public var tenant: ResolvedTenant?
    /// Set by ``AdminAuthMiddleware`` on admin routes.
    public var admin: AdminPrincipal?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.tenant = nil
        self.admin = nil
    }

    public var maxUploadSize: Int { HTTPLimits.maximumBodySize }

    public var responseEncoder: LatchkeyResponseEncoder { LatchkeyResponseEncoder() }

    /// The tenant of a tenant-scoped route; a programming error guard, never reached for unknown tenants.
    public func requireTenant() throws -> ResolvedTenant {
        guard let tenant else { throw OAuthError(.notFound, "not_found", "unknown tenant") }
        return tenant
    }

    /// The admin of an admin route; a programming error guard that fails closed.
    public func requireAdmin() throws -> AdminPrincipal {
        guard let admin else {
            throw OAuthError(.unauthorized, "invalid_token", "admin authentication is required")
        }
        return admin
    }
}

/// Fixed HTTP limits every service applies (request bodies, header sizes).
public enum HTTPLimits {
    /// Bodies over this size are answered with 413.
    public static let maximumBodySize = 64 * 1024
}
