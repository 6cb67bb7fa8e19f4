import Hummingbird
import NIOCore

/// The request context every Latchkey service uses: 64 KiB decode limit, peer address, resolved tenant.
public struct LatchkeyRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer; used for per-source throttling and for trusting proxy headers.
    public let remoteAddress: SocketAddress?
    /// Set by ``TenantResolverMiddleware`` on `/t/{tenant}` routes.
    public var tenant: ResolvedTenant?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.tenant = nil
    }

    public var maxUploadSize: Int { HTTPLimits.maximumBodySize }

    /// The tenant of a tenant-scoped route; a programming error guard, never reached for unknown tenants.
    public func requireTenant() throws -> ResolvedTenant {
        guard let tenant else { throw OAuthError(.notFound, "not_found", "unknown tenant") }
        return tenant
    }
}

/// Fixed HTTP limits of DESIGN §4.
public enum HTTPLimits {
    /// Bodies over this size are answered with 413.
    public static let maximumBodySize = 64 * 1024
}
