import Hummingbird
import Logging
import ServiceLifecycle

/// Runs a Hummingbird app on 127.0.0.1 (a free port) around `body`: the test upstream and issuer.
public func withLoopbackServer<T: Sendable>(
    _ router: Router<BasicRequestContext>, _ body: @Sendable (_ port: Int) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    var logger = Logger(label: "test.upstream")
    logger.logLevel = .critical
    let app = Application(
        router: router, server: .test,
        configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "test-upstream"),
        onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    let serviceGroup = ServiceGroup(configuration: .init(services: [app], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await serviceGroup.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw TestFailure("the loopback server did not start") }
        do {
            let result = try await body(port)
            await serviceGroup.triggerGracefulShutdown()
            try await group.waitForAll()
            return result
        } catch {
            await serviceGroup.triggerGracefulShutdown()
            try? await group.waitForAll()
            throw error
        }
    }
}

/// A failed test precondition with a message.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
