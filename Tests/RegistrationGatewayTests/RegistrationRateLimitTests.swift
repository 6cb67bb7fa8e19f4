import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationRateLimitTests {
    static func policy(perTenant: Int = 100, perSource: Int, mechanisms: String = #"["user_token"]"#) -> String {
        #"{"registration_mechanisms":\#(mechanisms),"rate_limits":{"registration":{"per_tenant_per_minute":\#(perTenant),"per_source_per_minute":\#(perSource)}}}"#
    }

    /// Counters use fixed one-minute windows, and requests that cross into the next window see their counts
    /// start again. So a test makes its requests in `run` on a tenant `setup` made for that attempt, and
    /// checks the observations of an attempt that began and ended in one window: attempts are repeated until
    /// one does, however slow the machine, instead of guessing from the clock how long they take.
    static func inOneWindow<Setup: Sendable, Observed: Sendable>(
        setup: () async throws -> Setup, _ run: (Setup) async throws -> Observed
    ) async throws -> Observed {
        while true {
            let prepared = try await setup()
            let start = try await currentWindow()
            let observed = try await run(prepared)
            if try await currentWindow() == start { return observed }
        }
    }

    /// The start of the database's current rate-limit window, in seconds since the epoch.
    static func currentWindow() async throws -> Double {
        try await TestDatabase.withApp { database in
            let rows = try await database.client.query(
                """
                SELECT extract(epoch FROM date_bin(make_interval(secs => \(RegistrationRateLimiter.windowSeconds)),
                                                   now(), timestamptz 'epoch'))::float8
                """, logger: database.logger)
            var start: Double?
            for try await value in rows.decode(Double.self) { start = value }
            return try #require(start)
        }
    }

    @Test func overTheSourceLimitIs429WithRetryAfterAndOtherTenantsAreUnaffected() async throws {
        struct Observed: Sendable {
            var created: [TestResponse] = []
            var refused, garbage, elsewhere: TestResponse?
            var registered = 0
        }
        let seen = try await Self.inOneWindow {
            let limited = try await GatewayHarness.make(policy: Self.policy(perSource: 2))
            let other = try await GatewayHarness.make(policy: Self.policy(perSource: 2))
            return (limited, other, try await limited.dcrToken(), try await other.dcrToken())
        } _: { limited, other, token, otherToken in
            let settings = try await TestServiceSettings.make(
                .registrationGateway, kafkaBrokers: GatewayHarness.sharedCluster.bootstrapServers)
            let app = try buildApplication(
                settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
            // Live: the source is the real TCP peer (127.0.0.1), not something a header can claim.
            var seen = try await app.journaledTest(.live) { client in
                let path = "/t/\(limited.tenant)/register"
                var seen = Observed()
                for attempt in 0..<2 {
                    seen.created.append(
                        try await client.send(
                            .post, path, token: token, json: RegistrationEndpointTests.native,
                            forwardedFor: "198.51.100.\(attempt)"))
                }
                seen.refused = try await client.send(
                    .post, path, token: token, json: RegistrationEndpointTests.native, forwardedFor: "203.0.113.9")
                // Even garbage is counted (and refused) before it is parsed.
                seen.garbage = try await client.send(.post, path, token: "x", json: "{not json")
                seen.elsewhere = try await client.send(
                    .post, "/t/\(other.tenant)/register", token: otherToken, json: RegistrationEndpointTests.native)
                return seen
            }
            seen.registered = try await limited.outboxPayloads(.clientRegistered).count
            return seen
        }
        #expect(seen.created.map(\.status) == [.created, .created])
        let refused = try #require(seen.refused)
        #expect(refused.status == .tooManyRequests)
        #expect(refused.errorCode == "too_many_requests")
        let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
        #expect((1...60).contains(retryAfter))
        #expect(seen.garbage?.status == .tooManyRequests)
        #expect(seen.elsewhere?.status == .created)
        #expect(seen.registered == 2)
    }

    @Test func sourcesAreCountedApartAndARefusedSourceSparesTheTenantBudget() async throws {
        let refused = try await Self.inOneWindow {
            try await GatewayHarness.make()
        } _: { h in
            try await TestDatabase.withApp { (database: Database) async throws -> [Bool] in
                let limiter = RegistrationRateLimiter(database: database)
                let limit = RateLimit(perTenantPerMinute: 3, perSourcePerMinute: 1)
                var refused: [Bool] = []
                // One source, six times: within its limit of 1 once, then refused.
                for _ in 0..<6 {
                    refused.append(
                        try await limiter.retryAfter(tenant: h.tenant, source: "192.0.2.1", open: false, limit: limit)
                            != nil)
                }
                for source in ["192.0.2.2", "2001:db8::1", "192.0.2.3"] {
                    refused.append(
                        try await limiter.retryAfter(tenant: h.tenant, source: source, open: false, limit: limit)
                            != nil)
                }
                return refused
            }
        }
        #expect(refused[0..<6] == [false, true, true, true, true, true])
        // Other sources still get through: the refusals above did not count against the tenant…
        #expect(refused[6..<8] == [false, false])
        // …until the tenant-wide limit (3) holds for every source.
        #expect(refused[8] == true)
    }

    /// Concurrent requests, from one gateway or from several replicas, are counted exactly: more requests
    /// at once than the limits allow let exactly the limits' number through.
    @Test func concurrentRequestsGetExactlyTheLimitThrough() async throws {
        let sources = ["192.0.2.10", "192.0.2.11", "192.0.2.12"]
        let (tenant, refusals) = try await Self.inOneWindow {
            try await GatewayHarness.make()
        } _: { h in
            let refusals = try await TestDatabase.withApp { (database: Database) async throws -> [String: Int] in
                let limiter = RegistrationRateLimiter(database: database)
                // 40 a minute per source, 100 for the tenant; 50 requests from each of three sources at once.
                let limit = RateLimit(perTenantPerMinute: 100, perSourcePerMinute: 40)
                return try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                    for source in sources {
                        for _ in 0..<50 {
                            group.addTask {
                                let retry = try await limiter.retryAfter(
                                    tenant: h.tenant, source: source, open: false, limit: limit)
                                return (source, retry != nil)
                            }
                        }
                    }
                    return try await group.reduce(into: [String: Int]()) { $0[$1.0, default: 0] += $1.1 ? 1 : 0 }
                }
            }
            return (h.tenant, refusals)
        }
        // 150 requests: each source gets at most 40 through, and the tenant at most 100 in all.
        let admitted = sources.map { 50 - (refusals[$0] ?? 0) }
        #expect(admitted.allSatisfy { $0 <= 40 }, "admitted per source: \(admitted)")
        #expect(admitted.reduce(0, +) == 100, "admitted per source: \(admitted)")
        let rows = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                let rows = try await connection.query(
                    """
                    SELECT limit_key, requests FROM registration_rate_limits WHERE tenant_id = \(tenant)
                    """, logger: database.logger)
                var found: [String: Int] = [:]
                for try await (key, requests) in rows.decode((String, Int).self) { found[key] = requests }
                return found
            }
        }
        // Limits this low are counted exactly on one row per bucket: no stripes.
        #expect(rows.count == sources.count + 1, "counter rows: \(rows.keys.sorted())")
        // Every request was counted once, by its source and, unless its source refused it, by the tenant.
        for source in sources {
            #expect(rows["source:\(source)"] == 50)
        }
        // Each source let 40 through to the tenant's bucket: 120 counted there, 100 of them within its limit.
        #expect(rows["tenant"] == 120)
    }

    /// A limit above the number of sessions the server admits (`max_connections`) is counted on one row per
    /// session stripe while no session's count can tip it over, and exactly, with every stripe locked, once
    /// the window's sum comes within that many requests of it: concurrent requests then still let exactly the
    /// limit's number through, and every request is counted once.
    @Test func aLimitAboveTheConnectionBoundIsCountedOnStripesAndStillExactly() async throws {
        let limit = try await TestDatabase.withApp { database in
            let rows = try await database.client.query(
                """
                SELECT current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int
                """, logger: database.logger)
            var value = 0
            for try await setting in rows.decode(Int.self) { value = setting }
            // max_connections - 1 other sessions and every prepared transaction may hold a count a request
            // cannot see: 5 requests are decided on their stripe alone.
            return value - 1 + 5
        }
        let (tenant, stripesAfterFast, refusals) = try await Self.inOneWindow {
            try await GatewayHarness.make()
        } _: { h in
            try await TestDatabase.withApp { (database: Database) async throws -> (String, Int, Int) in
                let limiter = RegistrationRateLimiter(database: database)
                let rateLimit = RateLimit(perTenantPerMinute: limit, perSourcePerMinute: 0)
                func stripes() async throws -> Int {
                    try await database.withTenantTransaction(h.tenant) { connection in
                        let rows = try await connection.query(
                            "SELECT count(*)::int FROM registration_rate_limits WHERE tenant_id = \(h.tenant)",
                            logger: database.logger)
                        var count = 0
                        for try await value in rows.decode(Int.self) { count = value }
                        return count
                    }
                }
                for _ in 0..<3 {
                    let retry = try await limiter.retryAfter(
                        tenant: h.tenant, source: "192.0.2.1", open: false, limit: rateLimit)
                    #expect(retry == nil)
                }
                let stripesAfterFast = try await stripes()
                // Earlier requests of the window, counted on the bucket's row, leave a budget of 20; it is
                // taken at once, with 30 requests more than it allows.
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        """
                        INSERT INTO registration_rate_limits AS r (tenant_id, limit_key, window_start, requests)
                        VALUES (\(h.tenant), 'tenant', date_bin(make_interval(secs => \(RegistrationRateLimiter.windowSeconds)),
                                now(), timestamptz 'epoch'), \(limit - 3 - 20))
                        ON CONFLICT (tenant_id, limit_key, window_start) DO UPDATE SET requests = r.requests + EXCLUDED.requests
                        """, logger: database.logger)
                }
                let refusals = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for _ in 0..<(20 + 30) {
                        group.addTask {
                            try await limiter.retryAfter(
                                tenant: h.tenant, source: "192.0.2.1", open: false, limit: rateLimit) != nil
                        }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                return (h.tenant, stripesAfterFast, refusals)
            }
        }
        // The first three took no exact count: only the stripes of the sessions that counted them have rows.
        #expect((1...3).contains(stripesAfterFast), "rows after the first three requests: \(stripesAfterFast)")
        #expect(refusals == 30)
        let counted = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                let rows = try await connection.query(
                    """
                    SELECT sum(requests)::int, count(*)::int FROM registration_rate_limits
                    WHERE tenant_id = \(tenant) AND (limit_key = 'tenant' OR limit_key LIKE 'tenant#_')
                    """, logger: database.logger)
                var found = (0, 0)
                for try await value in rows.decode((Int, Int).self) { found = value }
                return found
            }
        }
        #expect(counted.0 == limit + 30)
        #expect(counted.1 == 8)
    }

    @Test func openRegistrationIsLimitedHarder() async throws {
        let statuses = try await Self.inOneWindow {
            let h = try await GatewayHarness.make(
                policy: Self.policy(perSource: 4, mechanisms: #"["open","user_token"]"#))
            return (h, try await h.dcrToken())
        } _: { h, token in
            try await GatewayHarness.withAppResult { client in
                let path = "/t/\(h.tenant)/register"
                let first = try await client.send(.post, path, json: RegistrationEndpointTests.native)
                let refused = try await client.send(.post, path, json: RegistrationEndpointTests.native)
                let withToken = try await client.send(
                    .post, path, token: token, json: RegistrationEndpointTests.native)
                return [first, refused, withToken]
            }
        }
        #expect(statuses[0].status == .created)
        // Anonymous callers get a quarter of the per-source limit (4 / 4 = 1)…
        #expect(statuses[1].status == .tooManyRequests)
        #expect(statuses[1].headers[.retryAfter] != nil)
        // …while the same source with a user token still has its full allowance.
        #expect(statuses[2].status == .created)
    }

    @Test func bucketsFollowThePolicyAndZeroSwitchesALimitOff() {
        let buckets = RegistrationRateLimiter.buckets(
            for: RateLimit(perTenantPerMinute: 600, perSourcePerMinute: 30), source: "::1", open: true)
        #expect(
            buckets == [
                .init(key: "open-source:::1", limit: 7), .init(key: "source:::1", limit: 30),
                .init(key: "open", limit: 150), .init(key: "tenant", limit: 600),
            ])
        #expect(
            RegistrationRateLimiter.buckets(
                for: RateLimit(perTenantPerMinute: 0, perSourcePerMinute: 0), source: "::1", open: true
            ).isEmpty)
        #expect(
            RegistrationRateLimiter.buckets(
                for: RateLimit(perTenantPerMinute: 0, perSourcePerMinute: 2), source: "a", open: false)
                == [.init(key: "source:a", limit: 2)])
    }
}
