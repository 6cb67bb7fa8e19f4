import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import RegistrationGateway

@Suite struct ClientExpiryTests {
    static let hour: TimeInterval = 3600

    /// Inserts a client row directly, with the ages under test.
    static func insertClient(
        _ h: GatewayHarness, kind: String = "dynamic", createdAgo: TimeInterval, lastUsedAgo: TimeInterval? = nil,
        refreshToken: Bool = false
    ) async throws -> String {
        let clientID = "c-\(UUID().uuidString.lowercased())"
        let now = Date()
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO clients (tenant_id, client_id, client_kind, client_type, application_type, authenticated_user,
                                         registration_mechanism, metadata, registration_token_hash, created_at, last_used_at)
                    VALUES (\(h.tenant), \(clientID), \(kind), 'public', 'native', \(h.user),
                            \(kind == "dynamic" ? "user_token" : "admin"), '{}'::jsonb, 'rat-hash',
                            \(now.addingTimeInterval(-createdAgo)), \(lastUsedAgo.map { now.addingTimeInterval(-$0) }))
                    """, logger: database.logger)
                if refreshToken {
                    try await connection.query(
                        """
                        INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, client_id, user_id, scope, expires_at)
                        VALUES (\(h.tenant), \("rt-\(clientID)"), \(UUID()), \(clientID), \(h.user), 'openid', \(now.addingTimeInterval(hour)))
                        """, logger: database.logger)
                }
            }
        }
        return clientID
    }

    /// Status of each client, and the status of its refresh tokens.
    static func state(_ h: GatewayHarness, _ clientID: String) async throws -> (
        client: String?, tokens: [String], hasRAT: Bool
    ) {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                var status: String?
                var hasRAT = false
                for try await (s, rat) in try await connection.query(
                    "SELECT status, registration_token_hash FROM clients WHERE client_id = \(clientID)",
                    logger: database.logger
                ).decode((String, String?).self) {
                    status = s
                    hasRAT = rat != nil
                }
                var tokens: [String] = []
                for try await s in try await connection.query(
                    "SELECT status FROM refresh_tokens WHERE client_id = \(clientID)", logger: database.logger
                ).decode(String.self) { tokens.append(s) }
                return (status, tokens, hasRAT)
            }
        }
    }

    /// Waits until every client is `expired`. Expiry jobs of concurrently running tests sweep every tenant
    /// and skip rows another run holds, so a client may be expired by a transaction that commits a moment
    /// after our own run returned.
    static func waitUntilExpired(_ h: GatewayHarness, _ clientIDs: some Collection<String>) async throws {
        for _ in 0..<100 {
            var pending = 0
            for id in clientIDs where try await state(h, id).client != "expired" { pending += 1 }
            if pending == 0 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func runExpiry() async throws -> Int {
        try await TestDatabase.withSystem { database in
            try await ClientExpiryService(systemDatabase: database, outbox: OutboxWriter(), interval: .seconds(300))
                .runOnce()
        }
    }

    @Test func expiresOnlyDynamicClientsUnusedForLongerThanTheTTL() async throws {
        let h = try await GatewayHarness.make(policy: #"{"inactive_client_ttl":3600}"#)
        let neverUsed = try await Self.insertClient(h, createdAgo: 2 * Self.hour, refreshToken: true)
        let usedLongAgo = try await Self.insertClient(h, createdAgo: 50 * Self.hour, lastUsedAgo: 3 * Self.hour)
        let usedRecently = try await Self.insertClient(
            h, createdAgo: 50 * Self.hour, lastUsedAgo: 60, refreshToken: true)
        let fresh = try await Self.insertClient(h, createdAgo: 60)
        let staticClient = try await Self.insertClient(h, kind: "static", createdAgo: 50 * Self.hour)
        // Runs of other tests (and other gateways) sweep every tenant too, so only the outcome is asserted.
        _ = try await Self.runExpiry()
        try await Self.waitUntilExpired(h, [neverUsed, usedLongAgo])
        let expired = try await Self.state(h, neverUsed)
        #expect(expired.client == "expired")
        #expect(expired.tokens == ["revoked"])
        #expect(!expired.hasRAT)
        #expect(try await Self.state(h, usedLongAgo).client == "expired")
        let alive = try await Self.state(h, usedRecently)
        #expect(alive.client == "active")
        #expect(alive.tokens == ["active"])
        #expect(try await Self.state(h, fresh).client == "active")
        #expect(try await Self.state(h, staticClient).client == "active")

        let events = try await h.outboxPayloads(.clientRevoked)
        #expect(events.count == 2)
        let decoded = try events.map { try CloudEvent<ClientRevoked>.decode(from: Data($0.utf8)) }
        #expect(Set(decoded.map(\.data.clientID)) == [neverUsed, usedLongAgo])
        #expect(decoded.allSatisfy { $0.data.reason == .expired && $0.data.actor == ClientExpiryService.actor })
        // A second run finds nothing more of this tenant to do.
        _ = try await Self.runExpiry()
        #expect(try await h.outboxPayloads(.clientRevoked).count == 2)
    }

    @Test func aTTLOfZeroNeverExpires() async throws {
        let h = try await GatewayHarness.make(policy: #"{"inactive_client_ttl":0}"#)
        let ancient = try await Self.insertClient(h, createdAgo: 5000 * Self.hour)
        _ = try await Self.runExpiry()
        #expect(try await Self.state(h, ancient).client == "active")
        #expect(try await h.outboxPayloads(.clientRevoked).isEmpty)
    }

    @Test func concurrentRunsExpireEachClientOnce() async throws {
        let h = try await GatewayHarness.make(policy: #"{"inactive_client_ttl":3600}"#)
        var ids: Set<String> = []
        for _ in 0..<20 { ids.insert(try await Self.insertClient(h, createdAgo: 2 * Self.hour)) }
        async let first = Self.runExpiry()
        async let second = Self.runExpiry()
        _ = try await (first, second)
        try await Self.waitUntilExpired(h, ids)
        let events = try await h.outboxPayloads(.clientRevoked)
            .map { try CloudEvent<ClientRevoked>.decode(from: Data($0.utf8)).data.clientID }
        #expect(events.count == 20)
        #expect(Set(events) == ids)
    }

    @Test func theServiceRunsPeriodicallyUntilShutdown() async throws {
        let h = try await GatewayHarness.make(policy: #"{"inactive_client_ttl":3600}"#)
        try await TestDatabase.withSystem { database in
            let service = ClientExpiryService(
                systemDatabase: database, outbox: OutboxWriter(), interval: .milliseconds(100))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                // Inserted after the service started: only a later run can expire it.
                try await Task.sleep(for: .milliseconds(300))
                let late = try await Self.insertClient(h, createdAgo: 2 * Self.hour)
                var status: String?
                for _ in 0..<100 {
                    status = try await Self.state(h, late).client
                    if status == "expired" { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(status == "expired")
                group.cancelAll()
                try await group.waitForAll()
            }
        }
    }
}
