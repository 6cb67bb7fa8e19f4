import Foundation
import LatchkeyTestSupport
import Logging
import Synchronization
import Testing

@testable import LatchkeyPersistence

/// The relay claims and hands over its next batch while the previous one's deliveries are pending, so
/// a row written during a round does not wait for that round to end; it never hands a row over twice
/// and keeps at most two batches in flight.
@Suite(.serialized) struct OutboxRelayPipelineTests {
    let logger = Logger(label: "outbox-pipeline")

    @Test func theNextBatchIsHandedOverWhileThePreviousIsStillBeingDelivered() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = TestEnvironment.uniqueTenant("pl")
            try await TestDatabase.createTenant(tenant, in: db.app)
            let publisher = GatedPublisher()
            let relay = OutboxRelay(
                database: db.system, publisher: publisher, configuration: OutboxRelayConfiguration(), logger: logger)
            let writer = OutboxWriter()
            // Written before the relay starts, so its first claim takes them all as one batch.
            let first = try await db.writeEvents(5, tenant: tenant, keys: 2, writer: writer, topicSuffix: "e")
            try await withRunning([{ try await relay.run() }]) {
                defer { publisher.release() }  // also when an expectation below fails
                try await eventually("the first batch is handed over", within: .seconds(20)) {
                    publisher.handedOver.first?.count == 5
                }
                // Its deliveries are held back; rows written now must still go out.
                let second = try await db.writeEvents(5, tenant: tenant, keys: 2, writer: writer, topicSuffix: "e")
                try await eventually(
                    "a second batch is handed over before the first is delivered", within: .seconds(20)
                ) {
                    publisher.handedOver.count == 2
                }
                let handedOver = publisher.handedOver
                #expect(Set(handedOver[0]) == Set(first.map(\.0)))
                #expect(Set(handedOver[1]).isSubset(of: second.map(\.0)))
                // Two batches in flight: no third goes out until one of them is delivered.
                try await Task.sleep(for: .milliseconds(500))
                #expect(publisher.handedOver.count == 2, "a third batch went out while two were undelivered")
                #expect(try await db.unsentCount() == 10)

                publisher.release()
                #expect(try await db.waitUntilDrained(timeout: .seconds(30)) == 0)
                let all = publisher.handedOver.flatMap { $0 }
                #expect(all.count == Set(all).count, "a row was handed over twice")
                #expect(Set(all) == Set((first + second).map(\.0)))
                #expect(publisher.handedOver.allSatisfy { $0 == $0.sorted(by: publisher.sequenceOrder) })
            }
        }
    }
}

/// Records each batch handed over; holds every delivery until ``release()``.
private final class GatedPublisher: OutboxPublisher, Sendable {
    private struct State {
        var batches: [[UUID]] = []
        var sequences: [UUID: Int64] = [:]
        var released = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    var handedOver: [[UUID]] { state.withLock { $0.batches } }

    func sequenceOrder(_ left: UUID, _ right: UUID) -> Bool {
        state.withLock { ($0.sequences[left] ?? 0) < ($0.sequences[right] ?? 0) }
    }

    func release() {
        let waiting = state.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func publish(
        _ messages: [OutboxMessage], whenHandedOver: @escaping @Sendable () -> Void
    ) async -> [Result<Void, any Error>] {
        state.withLock { state in
            state.batches.append(messages.map(\.eventID))
            for message in messages { state.sequences[message.eventID] = message.sequence }
        }
        whenHandedOver()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let released = state.withLock { state in
                if !state.released { state.waiting.append(continuation) }
                return state.released
            }
            if released { continuation.resume() }
        }
        return messages.map { _ in .success(()) }
    }
}
