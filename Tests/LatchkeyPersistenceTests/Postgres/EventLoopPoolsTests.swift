import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import NIOPosix
import PostgresNIO
import Testing

/// A service's database pool is one pool per event loop: a caller on a loop leases a connection that lives on
/// that loop, and the pools together keep the configured number of connections.
@Suite struct EventLoopPoolsTests {
    @Test func theConnectionsAreSharedOutAsEvenlyAsTheyGo() throws {
        var configuration = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?pool_max=5&pool_min=3")
        #expect((0..<2).map { configuration.share($0, of: 2).maximumConnections } == [3, 2])
        #expect((0..<2).map { configuration.share($0, of: 2).minimumConnections } == [2, 1])
        #expect((0..<3).map { configuration.share($0, of: 3).maximumConnections } == [2, 2, 1])
        #expect(configuration.share(0, of: 1) == configuration)
        configuration.maximumConnections = 10
        configuration.minimumConnections = 10
        #expect((0..<2).map { configuration.share($0, of: 2).minimumConnections } == [5, 5])
        configuration.minimumConnections = 0
        #expect((0..<2).map { configuration.share($0, of: 2).minimumConnections } == [0, 0])
    }

    @Test func everyPoolKeepsEnoughConnectionsAndEveryLoopHasOne() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let loops = Array(group.makeIterator())
        for (url, expected) in [
            ("pool_max=7", [7]), ("pool_max=8", [4, 4]), ("pool_max=10", [5, 5]), ("pool_max=13", [5, 4, 4]),
        ] {
            let configuration = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?\(url)")
            let pools = EventLoopPools(configuration: configuration, group: group, logger: TestEnvironment.logger)
            #expect(pools.shares.map(\.maximumConnections) == expected, "\(url)")
            #expect(pools.clients.count == expected.count)
            // Every loop leases from a pool; with fewer pools than loops, they take turns.
            var chosen: [Int] = []
            for loop in loops {
                let client = try await loop.submit { pools.current }.get()
                chosen.append(pools.clients.firstIndex { $0 === client } ?? -1)
            }
            #expect(chosen == loops.indices.map { $0 % expected.count }, "\(url)")
        }
        try await group.shutdownGracefully()
    }

    @Test func aCallerOnAnEventLoopLeasesAConnectionOfThatLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        do {
            try await leaseOnEachLoop(of: group)
        } catch {
            try await group.shutdownGracefully()
            throw error
        }
        try await group.shutdownGracefully()
    }

    private func leaseOnEachLoop(of group: MultiThreadedEventLoopGroup) async throws {
        try await TestDatabase.prepare()
        var configuration = try TestEnvironment.appDatabase()
        configuration.maximumConnections = 8
        configuration.minimumConnections = 1
        configuration.keepAliveInterval = nil
        let pools = EventLoopPools(configuration: configuration, group: group, logger: TestEnvironment.logger)
        #expect(pools.clients.count == 2 && pools.shares.map(\.maximumConnections) == [4, 4])
        let database = Database(pools: pools, logger: TestEnvironment.logger)
        let loops = Array(group.makeIterator())
        try await withRunningPool(pools.clients[0]) {
            try await withRunningPool(pools.clients[1]) {
                for (index, loop) in loops.enumerated() {
                    let chosen = try await loop.submit { database.client }.get()
                    #expect(chosen === pools.clients[index])
                    let connectionLoop = try await chosen.withConnection { connection in
                        let rows = try await connection.query("SELECT 1", logger: TestEnvironment.logger)
                        for try await _ in rows {}
                        return connection.eventLoop
                    }
                    #expect(connectionLoop === loop)
                }
                // Off every loop (a background job): the first pool.
                #expect(database.client === pools.clients[0])
            }
        }
    }
}
