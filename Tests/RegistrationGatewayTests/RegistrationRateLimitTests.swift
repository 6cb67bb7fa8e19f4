import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationRateLimitTests {
    static func policy(perTenant: Int = 100, perSource: Int, mechanisms: String = #"["user_token"]"#) -> String {
        #"{"registration_mechanisms":\#(mechanisms),"rate_limits":{"registration":{"per_tenant_per_minute":\#(perTenant),"per_source_per_minute":\#(perSource)}}}"#
    }

    /// Counters use fixed one-minute windows; a test that needs several requests in one window starts
    /// early in a window rather than risk a rollover between its requests.
    static func startOfFreshWindow() async throws {
        let intoWindow = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 60)
        // A test that crosses into the next window sees its counts reset: start with at least 30 s left.
        if intoWindow > 30 { try await Task.sleep(for: .seconds(60 - intoWindow + 0.2)) }
    }

    @Test func overTheSourceLimitIs429WithRetryAfterAndOtherTenantsAreUnaffected() async throws {
        let limited = try await GatewayHarness.make(policy: Self.policy(perSource: 2))
        let other = try await GatewayHarness.make(policy: Self.policy(perSource: 2))
        let token = try await limited.dcrToken()
        let otherToken = try await other.dcrToken()
        try await Self.startOfFreshWindow()
        let settings = try await TestServiceSettings.make(
            .registrationGateway, kafkaBrokers: GatewayHarness.sharedCluster.bootstrapServers)
        let app = try buildApplication(
            settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
        // Live: the source is the real TCP peer (127.0.0.1), not something a header can claim.
        try await app.journaledTest(.live) { client in
            let path = "/t/\(limited.tenant)/register"
            for attempt in 0..<2 {
                let response = try await client.send(
                    .post, path, token: token, json: RegistrationEndpointTests.native,
                    forwardedFor: "198.51.100.\(attempt)")
                #expect(response.status == .created)
            }
            let refused = try await client.send(
                .post, path, token: token, json: RegistrationEndpointTests.native,
                forwardedFor: "203.0.113.9")
            #expect(refused.status == .tooManyRequests)
            #expect(refused.errorCode == "too_many_requests")
            let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...60).contains(retryAfter))
            // Even garbage is counted (and refused) before it is parsed.
            let garbage = try await client.send(.post, path, token: "x", json: "{not json")
            #expect(garbage.status == .tooManyRequests)
            let elsewhere = try await client.send(
                .post, "/t/\(other.tenant)/register", token: otherToken, json: RegistrationEndpointTests.native)
            #expect(elsewhere.status == .created)
        }
        #expect(try await limited.outboxPayloads(.clientRegistered).count == 2)
    }

    @Test func sourcesAreCountedApartAndARefusedSourceSparesTheTenantBudget() async throws {
        let h = try await GatewayHarness.make()
        try await Self.startOfFreshWindow()
        try await TestDatabase.withApp { (database: Database) async throws -> Void in
            let limiter = RegistrationRateLimiter(database: database)
            let limit = RateLimit(perTenantPerMinute: 3, perSourcePerMinute: 1)
            #expect(
                try await limiter.retryAfter(tenant: h.tenant, source: "192.0.2.1", open: false, limit: limit) == nil)
            for _ in 0..<5 {
                #expect(
                    try await limiter.retryAfter(tenant: h.tenant, source: "192.0.2.1", open: false, limit: limit)
                        != nil)
            }
            // Another source still gets through: the refusals above did not count against the tenant.
            #expect(
                try await limiter.retryAfter(tenant: h.tenant, source: "192.0.2.2", open: false, limit: limit) == nil)
            #expect(
                try await limiter.retryAfter(tenant: h.tenant, source: "2001:db8::1", open: false, limit: limit) == nil)
            // The tenant-wide limit (3) now holds for every source.
            #expect(
                try await limiter.retryAfter(tenant: h.tenant, source: "192.0.2.3", open: false, limit: limit) != nil)
        }
    }

    @Test func openRegistrationIsLimitedHarder() async throws {
        let h = try await GatewayHarness.make(policy: Self.policy(perSource: 4, mechanisms: #"["open","user_token"]"#))
        let token = try await h.dcrToken()
        try await Self.startOfFreshWindow()
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            #expect(try await client.send(.post, path, json: RegistrationEndpointTests.native).status == .created)
            // Anonymous callers get a quarter of the per-source limit (4 / 4 = 1)…
            let refused = try await client.send(.post, path, json: RegistrationEndpointTests.native)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] != nil)
            // …while the same source with a user token still has its full allowance.
            #expect(
                try await client.send(.post, path, token: token, json: RegistrationEndpointTests.native).status
                    == .created)
        }
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
