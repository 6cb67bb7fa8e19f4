import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import AuditConsumer

/// Chain extension against real PostgreSQL: serialised per tenant, never globally; idempotent.
@Suite struct AuditBatchStoreTests {
    static func records(_ events: [EncodedEvent]) throws -> [AuditRecord] {
        try events.map { try AuditEventDecoderTests.decoder.decode(AuditEventDecoderTests.message($0)).get() }
    }

    @Test func aBusyTenantDoesNotBlockAnotherOne() async throws {
        let busy = TestEnvironment.uniqueTenant("busy")
        let free = TestEnvironment.uniqueTenant("free")
        try await AuditTest.store([try AuditEventFactory(tenant: busy).issued(client: "c", user: nil)])
        let busyRecords = try Self.records(try AuditEventFactory(tenant: busy).bulk(10, clients: 2))
        let freeRecords = try Self.records(try AuditEventFactory(tenant: free).bulk(10, clients: 2))
        try await TestDatabase.withSystem { database in
            let store = AuditBatchStore(database: database, clock: SystemWallClock())
            let (released, release) = AsyncStream<Void>.makeStream()
            let (lockedSignal, locked) = AsyncStream<Void>.makeStream()
            // Another replica in the middle of extending the busy tenant's chain.
            let holder = Task {
                try await database.withTransaction { connection in
                    try await connection.query(
                        "SELECT sequence FROM audit_chain_heads WHERE tenant_id = \(busy) FOR UPDATE",
                        logger: database.logger)
                    locked.yield()
                    for await _ in released { break }
                }
            }
            for await _ in lockedSignal { break }
            let busyStore = Task { try await store.store(busyRecords) }
            let started = ContinuousClock.now
            let freeOutcome = try await store.store(freeRecords)
            #expect(freeOutcome.stored.map(\.sequence) == Array(1...10))
            // Completing at all proves it: the busy tenant's chain head stays locked until `release` below.
            #expect(ContinuousClock.now - started < .seconds(30), "the free tenant waited for the busy one")
            try await Task.sleep(for: .milliseconds(300))
            let stillRows = try await AuditTest.storedCount(tenants: [busy], in: database)
            #expect(stillRows == 1, "the busy tenant's batch waits for its chain head")
            release.yield()
            try await holder.value
            let busyOutcome = try await busyStore.value
            #expect(busyOutcome.stored.map(\.sequence) == Array(2...11))
        }
    }

    @Test func concurrentWritersOfOneTenantProduceOneGaplessChain() async throws {
        let tenant = TestEnvironment.uniqueTenant("conc")
        let batches = try (0..<8).map { _ in
            try Self.records(try AuditEventFactory(tenant: tenant).bulk(25, clients: 5))
        }
        try await TestDatabase.withSystem { database in
            let store = AuditBatchStore(database: database, clock: SystemWallClock())
            try await withThrowingTaskGroup(of: Void.self) { group in
                for batch in batches { group.addTask { _ = try await store.store(batch) } }
                try await group.waitForAll()
            }
        }
        try await TestDatabase.withApp { database in
            let result = try await ChainVerifier(reader: AuditLogReader(database: database)).verify(tenant: tenant)
            #expect(result.isIntact, "\(result)")
            #expect(result.headSequence == 200)
        }
    }

    @Test func duplicatesAreCountedAndIdConflictsReported() async throws {
        let tenant = TestEnvironment.uniqueTenant("idem")
        let factory = AuditEventFactory(tenant: tenant)
        let first = try factory.registered(client: "c", user: AuditEventFactory.user(1))
        var clash = try factory.updated(client: "c", user: AuditEventFactory.user(1))
        var clashObject = try #require(try StrictJSONParser.parse(clash.value).objectValue)
        clashObject["id"] = .string(first.id)
        clash.value = CanonicalJSON.encode(.object(clashObject))
        let otherTenant = try AuditEventFactory(tenant: TestEnvironment.uniqueTenant("idem2")).updated(
            client: "c", user: AuditEventFactory.user(2))
        var squatter = otherTenant
        var squatterObject = try #require(try StrictJSONParser.parse(squatter.value).objectValue)
        squatterObject["id"] = .string(first.id)
        squatter.value = CanonicalJSON.encode(.object(squatterObject))

        let inBatch = try await AuditTest.store([first, first, clash])
        #expect(inBatch.stored.count == 1)
        #expect(inBatch.duplicates == 1)
        #expect(inBatch.conflicts.map(\.reason) == [.idConflict])
        let later = try await AuditTest.store([first, clash, squatter])
        #expect(later.stored.isEmpty)
        #expect(later.duplicates == 1)
        #expect(later.conflicts.count == 2)
        #expect(try await AuditTest.storedCount(tenants: [tenant]) == 1)
    }
}
