import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// A service's pool on one database, made of one `PostgresClient` per event loop: each opens its connections
/// on its own loop and has its share of the configured connections.
///
/// A request runs on the event loop of its HTTP connection. A statement sent over a PostgreSQL connection
/// of another loop crosses threads twice (the write handed to that loop, the answer handed back), and each
/// crossing wakes a sleeping thread, which on a virtual machine is an exit to the hypervisor. Leasing from
/// the pool of the caller's own loop keeps a request's statements on its thread. Callers on no event loop
/// (background jobs on Swift's pool) lease from the first pool.
public struct EventLoopPools: Sendable {
    /// One client per loop (or the one client given).
    public let clients: [PostgresClient]
    /// Each client's share of the connections, when these pools were built from a configuration.
    public let shares: [DatabaseConfiguration]
    /// The loop each member's connections live on, by identity; empty for a single pool.
    private let loops: [ObjectIdentifier]

    /// One pool per loop of `group`, as many as `configuration` allows connections (a pool opens at least one).
    public init(
        configuration: DatabaseConfiguration, group: MultiThreadedEventLoopGroup = .singleton, logger: Logger
    ) {
        let loops = Array(group.makeIterator().prefix(max(1, configuration.maximumConnections)))
        shares = loops.indices.map { configuration.share($0, of: loops.count) }
        clients = zip(loops, shares).map { loop, share in
            PostgresClient(configuration: share.clientConfiguration, eventLoopGroup: loop, backgroundLogger: logger)
        }
        self.loops = loops.count > 1 ? loops.map { ObjectIdentifier($0) } : []
    }

    /// One pool on any loop (commands, tests, the cross-tenant pool).
    public init(_ client: PostgresClient) {
        clients = [client]
        shares = []
        loops = []
    }

    /// The pool whose connections live on the caller's event loop, else the first.
    public var current: PostgresClient {
        if !loops.isEmpty, let loop = MultiThreadedEventLoopGroup.currentEventLoop,
            let index = loops.firstIndex(of: ObjectIdentifier(loop))
        {
            return clients[index]
        }
        return clients[0]
    }
}

extension DatabaseConfiguration {
    /// Pool `part` of `parts` pools that together keep this configuration's bounds: the maximum and the
    /// connections kept open divided as evenly as they go, the first pools taking the remainder.
    public func share(_ part: Int, of parts: Int) -> DatabaseConfiguration {
        guard parts > 1 else { return self }
        func portion(_ total: Int) -> Int { total / parts + (part < total % parts ? 1 : 0) }
        var share = self
        share.maximumConnections = max(1, portion(maximumConnections))
        share.minimumConnections = min(portion(minimumConnections), share.maximumConnections)
        return share
    }
}
