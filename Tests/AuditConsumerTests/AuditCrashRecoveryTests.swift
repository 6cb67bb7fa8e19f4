import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import AuditConsumer

/// A consumer that dies between storing a batch and committing its offsets, or in the middle of
/// reading, leaves no gap and no duplicate once a successor has taken over.
@Suite struct AuditCrashRecoveryTests {
    struct SimulatedCrash: Error {}

    @Test func aCrashBetweenStoreAndCommitLeavesNoGapAndNoDuplicate() async throws {
        let tenants = (0..<3).map { _ in TestEnvironment.uniqueTenant("crash") }
        let events = try tenants.flatMap { try AuditEventFactory(tenant: $0).bulk(600, clients: 12) }
        try await AuditTest.withCluster { cluster in
            let reports = try await AuditTest.withProducer(cluster) {
                try await AuditTest.sendConcurrently(events, with: $0)
            }

            // First consumer: its third batch is stored, then it "crashes" before committing anything of it.
            let batchSizes = Mutex<[Int]>([])
            let crashing = try await AuditTest.makeService(
                cluster: cluster, audit: AuditTest.settings(batchSize: 200),
                hooks: AuditIngestor.Hooks(afterStore: { number, outcome in
                    batchSizes.withLock { $0.append(outcome.stored.count) }
                    if number == 3 { throw SimulatedCrash() }
                }))
            let first = await Self.runIngestorUntilItStops(crashing)
            #expect(
                first is SimulatedCrash,
                "the ingestor must stop with the simulated crash, got \(String(describing: first))")
            let sizes = batchSizes.withLock { $0 }
            #expect(sizes.count == 3)
            #expect(
                try await AuditTest.storedCount(tenants: tenants) == sizes.reduce(0, +),
                "three batches are in PostgreSQL")
            // Two batches were committed to Kafka as well; the third is stored but its offsets are not.
            #expect(Int(crashing.ingestor.committedOffsets.values.reduce(0, +)) == sizes.prefix(2).reduce(0, +))

            // Successor in the same group: re-reads the uncommitted batch (duplicates) and the rest.
            let successor = try await AuditTest.makeService(cluster: cluster, audit: AuditTest.settings(batchSize: 200))
            try await successor.makeApplication().journaledTest(.router) { _ in
                try await AuditTest.waitUntilCommitted(successor, reports)
                try await AuditIngestionTests.expectExactlyOnce(events, tenants: tenants)
                try await AuditIngestionTests.expectPartitionOrder(tenants: tenants)
                for tenant in tenants {
                    let result = try await ChainVerifier(reader: successor.reader).verify(tenant: tenant)
                    #expect(result.isIntact, "\(result)")
                    #expect(result.headSequence == 600)
                }
            }
        }
    }

    @Test func cancellingTheConsumerMidBatchLosesNothing() async throws {
        let tenant = TestEnvironment.uniqueTenant("cancel")
        let events = try AuditEventFactory(tenant: tenant).bulk(1_500, clients: 15)
        try await AuditTest.withCluster { cluster in
            let reports = try await AuditTest.withProducer(cluster) {
                try await AuditTest.sendConcurrently(events, with: $0)
            }
            // Cancelled from inside its second batch, after the transaction but before the commit.
            let cancelled = try await AuditTest.makeService(
                cluster: cluster, audit: AuditTest.settings(batchSize: 250),
                hooks: AuditIngestor.Hooks(afterStore: { number, _ in
                    if number == 2 { withUnsafeCurrentTask { $0?.cancel() } }
                    try Task.checkCancellation()
                }))
            let outcome = await Self.runIngestorUntilItStops(cancelled)
            #expect(outcome == nil || outcome is CancellationError, "\(String(describing: outcome))")
            let successor = try await AuditTest.makeService(cluster: cluster, audit: AuditTest.settings(batchSize: 250))
            try await successor.makeApplication().journaledTest(.router) { _ in
                try await AuditTest.waitUntilCommitted(successor, reports)
                try await AuditIngestionTests.expectExactlyOnce(events, tenants: [tenant])
                let result = try await ChainVerifier(reader: successor.reader).verify(tenant: tenant)
                #expect(result.isIntact && result.headSequence == Int64(events.count), "\(result)")
            }
        }
    }

    /// Runs only the ingestion services (consumer, producer, ingestor) with the pools until the
    /// ingestor stops; returns the error it stopped with. The consumer then leaves the group.
    static func runIngestorUntilItStops(_ service: AuditService) async -> (any Error)? {
        let pools = ([service.runtime.postgres] + (service.runtime.systemPostgres.map { [$0] } ?? []))
            .map(ConnectionPoolRun.init)
        let failure = await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await service.producer.run() }
            defer { group.cancelAll() }
            var failure: (any Error)?
            do {
                try await service.ingestor.run()
            } catch {
                failure = error
            }
            await service.consumer.close()
            return failure
        }
        for pool in pools { await pool.stop() }
        return failure
    }
}
