import Logging
import PostgresNIO
import ServiceLifecycle

/// A running `PostgresClient` (its `run()`, which serves every lease) that is stopped with a bounded wait.
///
/// Told to stop, PostgresNIO's pool closes its connections and then returns from `run()`; now and then it
/// never returns (seen in applications stopped seconds after they started, with none of their connections
/// left open). Awaiting that return without limit hangs whatever stops the pool: a service's graceful
/// shutdown, a command, a test. So the run is a task of its own, and stopping it waits for it only up to
/// a limit; what may be left behind is a suspended task.
public final class ConnectionPoolRun: Sendable {
    /// How long a stopped pool is given to return, far more than closing idle connections takes.
    public static let defaultStopTimeout: Duration = .seconds(5)

    private let task: Task<Void, Never>
    /// Finishes when the run returns.
    private let ended: AsyncStream<Void>
    /// Finishes right before the run starts.
    private let starting: AsyncStream<Void>

    /// Starts `client.run()`.
    public convenience init(_ client: PostgresClient) {
        self.init(running: { await client.run() })
    }

    /// Starts `run`, a pool's run loop (tests give one that ignores being stopped).
    init(running run: @escaping @Sendable () async -> Void) {
        let (ended, finish) = AsyncStream.makeStream(of: Void.self)
        let (starting, start) = AsyncStream.makeStream(of: Void.self)
        self.ended = ended
        self.starting = starting
        self.task = Task {
            start.finish()
            await run()
            finish.finish()
        }
    }

    /// Returns once the run's task is about to call `run()`. PostgresNIO warns about every lease taken
    /// before its pool runs (the lease waits, so it is harmless, but a test suite printed it a thousand
    /// times); a caller that leases at once waits for this first.
    public func started() async {
        for await _ in starting {}
    }

    /// Stops the pool and waits up to `timeout` for its run to return; false when it did not (the caller
    /// goes on without it). Call once. A caller that is itself cancelled still gives the pool its time.
    @discardableResult
    public func stop(within timeout: Duration = defaultStopTimeout) async -> Bool {
        task.cancel()
        let ended = self.ended
        // Unstructured, so that the caller's cancellation does not cut the wait short.
        return await Task {
            await Self.firstOf(ended: ended, timeout: timeout)
        }.value
    }

    /// True when `ended` finishes before `timeout` passes.
    private static func firstOf(ended: AsyncStream<Void>, timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in ended {}
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let returned = await group.next() ?? false
            group.cancelAll()
            return returned
        }
    }
}

/// A `PostgresClient` as a service of a `ServiceGroup`: the pool serves until graceful shutdown (or
/// cancellation), then stops within ``ConnectionPoolRun/defaultStopTimeout``, so one pool that fails to
/// return can never keep its group from finishing.
public struct ConnectionPoolService: Service, CustomStringConvertible {
    public let client: PostgresClient
    let logger: Logger

    public init(_ client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func run() async {
        let run = ConnectionPoolRun(client)
        // Returns on graceful shutdown, throws on cancellation: the pool stops either way.
        try? await gracefulShutdown()
        if await !run.stop() {
            logger.warning(
                "the PostgreSQL connection pool did not return after it was stopped; going on without it",
                metadata: ["timeout": "\(ConnectionPoolRun.defaultStopTimeout)"])
        }
    }

    public var description: String { "PostgreSQL connection pool" }
}

/// Runs `body` while `client` serves, and stops the pool afterwards (see ``ConnectionPoolRun``).
public func withRunningPool<Result>(
    _ client: PostgresClient, _ body: () async throws -> Result
) async throws -> Result {
    let run = ConnectionPoolRun(client)
    await run.started()
    do {
        let result = try await body()
        await run.stop()
        return result
    } catch {
        await run.stop()
        throw error
    }
}
