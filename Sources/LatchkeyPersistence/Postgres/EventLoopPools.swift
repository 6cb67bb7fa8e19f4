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
/// the pool of the caller's own loop keeps a request's statements on its thread.
///
/// Every pool keeps at least ``minimumShare`` connections, so that a loop's concurrent requests (and a
/// connection held for `LISTEN`) do not wait on one another: with fewer connections in all than two
/// pools need, there is one pool over every loop, and with more loops than pools the other loops share
/// the pools in turn. Callers on no event loop (background jobs on Swift's pool) lease from the first.
public struct EventLoopPools: Sendable {
    /// The fewest connections a pool of one loop gets.
    public static let minimumShare = 4

    /// One client per pool.
    public let clients: [PostgresClient]
    /// Each client's share of the connections, when these pools were built from a configuration.
    public let shares: [DatabaseConfiguration]
    /// The pool of each loop, by the loop's identity; empty for a single pool.
    private let poolOfLoop: [ObjectIdentifier: Int]

    /// As many pools as `configuration` has connections for (one per loop of `group` at most).
    public init(
        configuration: DatabaseConfiguration, group: MultiThreadedEventLoopGroup = .singleton, logger: Logger
    ) {
        let loops = Array(group.makeIterator())
        let count = min(loops.count, max(1, configuration.maximumConnections / Self.minimumShare))
        guard count > 1 else {
            shares = [configuration]
            clients = [
                PostgresClient(
                    configuration: configuration.clientConfiguration, eventLoopGroup: group, backgroundLogger: logger)
            ]
            poolOfLoop = [:]
            return
        }
        let shares = (0..<count).map { configuration.share($0, of: count) }
        self.shares = shares
        clients = zip(loops, shares).map { loop, share in
            PostgresClient(configuration: share.clientConfiguration, eventLoopGroup: loop, backgroundLogger: logger)
        }
        poolOfLoop = Dictionary(uniqueKeysWithValues: loops.enumerated().map { (ObjectIdentifier($1), $0 % count) })
    }

    /// One pool on any loop (commands, tests, the cross-tenant pool).
    public init(_ client: PostgresClient) {
        clients = [client]
        shares = []
        poolOfLoop = [:]
    }

    /// The pool of the caller's event loop, else the first.
    public var current: PostgresClient {
        if !poolOfLoop.isEmpty, let loop = MultiThreadedEventLoopGroup.currentEventLoop,
            let index = poolOfLoop[ObjectIdentifier(loop)]
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
