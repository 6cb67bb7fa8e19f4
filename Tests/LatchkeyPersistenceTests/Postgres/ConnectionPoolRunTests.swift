import LatchkeyTestSupport
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

@testable import LatchkeyPersistence

/// A pool is stopped with a bounded wait, so a run that never returns cannot hang its service group.
@Suite struct ConnectionPoolRunTests {
    @Test func aRunThatIgnoresBeingStoppedIsLeftBehindAfterTheTimeout() async throws {
        // A run that does not return when cancelled, like a pool that closed its connections and never returned.
        let parked = Parked()
        let run = ConnectionPoolRun(running: { await withCheckedContinuation { parked.hold($0) } })
        #expect(await run.stop(within: .milliseconds(200)) == false)
        parked.release()
    }

    @Test func aRealPoolServesAndStops() async throws {
        let client = try TestEnvironment.appDatabase().makeClient(logger: TestEnvironment.logger)
        let run = ConnectionPoolRun(client)
        let rows = try await client.query("SELECT 41 + 1", logger: TestEnvironment.logger)
        var answer: Int?
        for try await value in rows.decode(Int.self) { answer = value }
        #expect(answer == 42)
        #expect(await run.stop(within: .seconds(60)))
    }

    @Test func aCancelledCallerStillGivesThePoolItsTimeToReturn() async throws {
        let client = try TestEnvironment.appDatabase().makeClient(logger: TestEnvironment.logger)
        let run = ConnectionPoolRun(client)
        let rows = try await client.query("SELECT 1", logger: TestEnvironment.logger)
        for try await _ in rows.decode(Int.self) {}
        let stopping = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await run.stop(within: .seconds(60))
        }
        #expect(await stopping.value)
    }

    @Test func thePoolServiceEndsWithItsGroup() async throws {
        let client = try TestEnvironment.appDatabase().makeClient(logger: TestEnvironment.logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [ConnectionPoolService(client, logger: TestEnvironment.logger)],
                logger: TestEnvironment.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let rows = try await client.query("SELECT 1", logger: TestEnvironment.logger)
            for try await _ in rows.decode(Int.self) {}
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// Holds a run's continuation until the test lets it go.
private final class Parked: Sendable {
    private let state = Mutex<(released: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

    func hold(_ waiting: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { state in
            if !state.released { state.waiting = waiting }
            return state.released
        }
        if resumeNow { waiting.resume() }
    }

    func release() {
        state.withLock { state in
            state.released = true
            return state.waiting.take()
        }?.resume()
    }
}
