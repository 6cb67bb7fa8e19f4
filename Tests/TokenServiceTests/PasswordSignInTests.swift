import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import TokenService

/// Password hashing load, rate_limits.login, sign-up throttling, the per-account ceiling for unknown
/// addresses, trusted proxies and hash upgrades on the sign-in and sign-up pages.
@Suite struct PasswordSignInTests {
    typealias Page = (csrf: String, request: String)

    static func signUp(
        _ browser: inout PageBrowser, _ fixture: TokenServiceHarness, page: Page, username: String, password: String,
        from source: String? = nil
    ) async throws -> PageResponse {
        browser.extraHeaders = source.map { [HTTPField.Name("X-Forwarded-For")!: $0] } ?? [:]
        return try await browser.post(
            "/t/\(fixture.tenant)/signup",
            form: [
                ("csrf_token", page.csrf), ("authorization_request", page.request), ("username", username),
                ("email", "\(username)@example.test"), ("password", password),
            ])
    }

    @Test func saturatedHashingAnswers503WithRetryAfter() async throws {
        try await TokenServiceHarness.run(configure: {
            $0.hashingLimiter = PasswordHashingLimiter(maximumConcurrent: 1, maximumWait: .milliseconds(100))
        }) { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            // Someone else holds the only hashing slot.
            try await fixture.settings.hashingLimiter.acquire()
            let busy = try await SignInPageSecurityTests.attempt(
                &browser, fixture, page: page, "alice", AuthorizeFlowTests.password)
            #expect(busy.status == 503)
            #expect(busy.body.contains("temporarily_unavailable"))
            #expect(try #require(busy.header("Retry-After").flatMap(Int.init)) >= 1)
            let busySignUp = try await Self.signUp(
                &browser, fixture, page: page, username: "bob", password: "Another password 99")
            #expect(busySignUp.status == 503 && busySignUp.header("Retry-After") != nil)
            #expect(try await fixture.count("SELECT count(*)::int8 FROM users WHERE username = 'bob'") == 0)
            // A refusal for load is not a failed guess.
            #expect(try await fixture.count("SELECT count(*)::int8 FROM sign_in_sources WHERE failures > 0") == 0)
            await fixture.settings.hashingLimiter.release()
            let signedIn = try await SignInPageSecurityTests.attempt(
                &browser, fixture, page: page, "alice", AuthorizeFlowTests.password)
            #expect(signedIn.status == 302)
        }
    }

    @Test func hashingLimiterQueuesBrieflyThenRefuses() async throws {
        let limiter = PasswordHashingLimiter(maximumConcurrent: 2, maximumWait: .milliseconds(200), maximumQueued: 1)
        try await limiter.acquire()
        try await limiter.acquire()
        // A waiter gets the next freed slot.
        async let waiter: Void = limiter.acquire()
        try await Task.sleep(for: .milliseconds(20))
        await limiter.release()
        try await waiter
        // Beyond the queue: refused at once; in the queue too long: refused after the wait.
        async let queued: Void = limiter.acquire()
        try await Task.sleep(for: .milliseconds(20))
        await #expect(throws: PasswordHashingLimiter.Busy.self) { try await limiter.acquire() }
        do {
            try await queued
            Issue.record("a waiter past maximumWait was let in")
        } catch is PasswordHashingLimiter.Busy {}
        await limiter.release()
        await limiter.release()
        #expect(try await limiter.run { 6 * 7 } == 42)
    }

    @Test func rateLimitsLoginIsEnforcedPerSourceAndPerTenant() async throws {
        let policy = #"{"rate_limits":{"login":{"per_source_per_minute":3,"per_tenant_per_minute":5}}}"#
        try await TokenServiceHarness.run(
            policy: policy, setup: .live, configure: SignInPageSecurityTests.trustLoopback
        ) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            // The counters are per minute of the clock: a round that crossed into the next minute started
            // over in the middle and proves nothing, so it is played again (its addresses and names are new)
            // once a minute no earlier round counted in has begun.
            var lastCounted: Int?
            for round in 0..<3 {
                if let lastCounted {
                    #expect(
                        try await eventually(within: .seconds(90)) {
                            Int(Date().timeIntervalSince1970 / 60) > lastCounted
                        })
                }
                func attempt(_ name: String, from source: String) async throws -> PageResponse {
                    try await SignInPageSecurityTests.attempt(
                        &browser, fixture, page: page, "\(name)-\(round)", "guess-1234", from: source)
                }
                let first = "203.0.\(113 + round).1"
                let second = "203.0.\(113 + round).2"
                let minute = Int(Date().timeIntervalSince1970 / 60)
                var statuses: [Int] = []
                for index in 0..<3 { statuses.append(try await attempt("user\(index)", from: first).status) }
                let limited = try await attempt("user9", from: first)
                // Another address has its own budget, until the tenant's is spent.
                for index in 0..<2 { statuses.append(try await attempt("other\(index)", from: second).status) }
                let tenantLimited = try await attempt("other9", from: second)
                let ended = Int(Date().timeIntervalSince1970 / 60)
                guard ended == minute || round == 2 else {
                    lastCounted = ended
                    continue
                }
                #expect(statuses == [401, 401, 401, 401, 401])
                #expect(limited.status == 429)
                #expect((1...60).contains(try #require(limited.header("Retry-After").flatMap(Int.init))))
                #expect(tenantLimited.status == 429)
                return
            }
        }
    }

    @Test func signUpIsThrottledPerSource() async throws {
        // Sign-up gets a sixth of the login budget: 2 per address per minute here.
        let policy = #"{"rate_limits":{"login":{"per_source_per_minute":12}}}"#
        try await TokenServiceHarness.run(
            policy: policy, setup: .live, configure: SignInPageSecurityTests.trustLoopback
        ) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            let (statuses, retryAfter, bot3) = try await Self.inOneMinuteWindow { round in
                let source = "203.0.\(113 + round).5"
                let first = try await Self.signUp(
                    &browser, fixture, page: page, username: "bot1-\(round)", password: "Bot password 1234",
                    from: source)
                let second = try await Self.signUp(
                    &browser, fixture, page: page, username: "bot2-\(round)", password: "short", from: source)
                let third = try await Self.signUp(
                    &browser, fixture, page: page, username: "bot3-\(round)", password: "Bot password 1234",
                    from: source)
                let stored = try await fixture.count(
                    "SELECT count(*)::int8 FROM users WHERE username = 'bot3-\(round)'")
                let elsewhere = try await Self.signUp(
                    &browser, fixture, page: page, username: "carol-\(round)", password: "Carol password 1234",
                    from: "203.0.\(113 + round).6")
                return (
                    [first.status, second.status, third.status, elsewhere.status], third.header("Retry-After"), stored
                )
            }
            #expect(statuses == [302, 400, 429, 302])
            #expect(retryAfter != nil)
            #expect(bot3 == 0)
        }
    }

    @Test func unknownSourcesHitTheAccountCeilingWhileAKnownSourceStillSignsIn() async throws {
        let policy = #"{"rate_limits":{"login_per_user_per_minute":0}}"#
        try await TokenServiceHarness.run(
            policy: policy, setup: .live, configure: SignInPageSecurityTests.trustLoopback
        ) { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "pin", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            let home = "198.51.100.10"
            #expect(
                try await SignInPageSecurityTests.attempt(
                    &browser, fixture, page: page, "pin", AuthorizeFlowTests.password, from: home
                ).status == 302)
            // A botnet: one guess per address, never enough for any address's own delay.
            let ceiling = SignInThrottle().unknownSourceCeiling
            for index in 0..<ceiling {
                let response = try await SignInPageSecurityTests.attempt(
                    &browser, fixture, page: page, "pin", "\(1000 + index)", from: "192.0.2.\(index + 1)")
                #expect(response.status == 401)
            }
            // Past the ceiling no new address gets a try, even with the right secret...
            let refused = try await SignInPageSecurityTests.attempt(
                &browser, fixture, page: page, "pin", AuthorizeFlowTests.password, from: "192.0.2.200")
            #expect(refused.status == 429)
            #expect(try #require(refused.header("Retry-After").flatMap(Int.init)) > 3600)
            // ...while the address the user signed in from before still works.
            #expect(
                try await SignInPageSecurityTests.attempt(
                    &browser, fixture, page: page, "pin", AuthorizeFlowTests.password, from: home
                ).status == 302)
        }
    }

    @Test func loginPerUserPerMinuteLimitsUnknownSources() async throws {
        let policy = #"{"rate_limits":{"login_per_user_per_minute":2}}"#
        try await TokenServiceHarness.run(
            policy: policy, setup: .live, configure: SignInPageSecurityTests.trustLoopback
        ) { client, fixture in
            let app = try await fixture.insertPublicApp()
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            let statuses = try await Self.inOneMinuteWindow { round in
                let user = "alice-\(round)"
                try await fixture.insertUser(username: user, password: AuthorizeFlowTests.password)
                var statuses: [Int] = []
                for guess in 1...3 {
                    statuses.append(
                        try await SignInPageSecurityTests.attempt(
                            &browser, fixture, page: page, user, "guess-\(guess)", from: "192.0.\(2 + round).\(guess)"
                        ).status)
                }
                return statuses
            }
            #expect(statuses == [401, 401, 429])
        }
    }

    /// Plays `round` (numbered from 0, so each round can use fresh names and addresses) until one round
    /// starts and ends within the same minute of the clock, and returns what that round saw. The throttle
    /// counts in fixed one-minute windows: a round that crossed into the next minute was reset in the middle
    /// and proves nothing, so the next round waits for a minute no earlier round counted in.
    static func inOneMinuteWindow<Result>(_ round: (Int) async throws -> Result) async throws -> Result {
        func minute() -> Int { Int(Date().timeIntervalSince1970 / 60) }
        var number = 0
        while true {
            let started = minute()
            let result = try await round(number)
            let ended = minute()
            if ended == started || number == 2 { return result }
            #expect(try await eventually(within: .seconds(90)) { minute() > ended })
            number += 1
        }
    }

    @Test func forwardedAddressesAreBelievedOnlyFromTrustedProxies() throws {
        let resolver = try ClientAddressResolver(setting: "10.0.0.0/8, 2001:db8::/32")
        let proxy = try SocketAddress(ipAddress: "10.1.2.3", port: 443)
        let stranger = try SocketAddress(ipAddress: "203.0.113.9", port: 443)
        func headers(_ pairs: [(String, String)]) -> HTTPFields {
            HTTPFields(pairs.map { HTTPField(name: HTTPField.Name($0.0)!, value: $0.1) })
        }
        #expect(
            resolver.clientAddress(peer: stranger, headers: headers([("X-Forwarded-For", "192.0.2.1")]))
                == "203.0.113.9")
        // The right-most address that is not a trusted proxy; what the client wrote to the left is ignored.
        #expect(
            resolver.clientAddress(peer: proxy, headers: headers([("X-Forwarded-For", "1.1.1.1, 192.0.2.1, 10.9.9.9")]))
                == "192.0.2.1")
        #expect(
            resolver.clientAddress(
                peer: proxy,
                headers: headers([
                    ("Forwarded", #"for=1.1.1.1, for="[2001:db8::5]:80";proto=https, for=192.0.2.7:5000"#)
                ])) == "192.0.2.7")
        #expect(
            resolver.clientAddress(peer: proxy, headers: headers([("Forwarded", #"for="[2001:db8::5]""#)]))
                == "2001:db8::5")
        #expect(resolver.clientAddress(peer: proxy, headers: headers([])) == "10.1.2.3")
        #expect(resolver.clientAddress(peer: proxy, headers: headers([("X-Forwarded-For", "unknown")])) == "10.1.2.3")
        #expect(throws: ConfigurationError.self) { try ClientAddressResolver(setting: "10.0.0.0/33") }
    }

    @Test func signInUpgradesAWeakerStoredHash() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let app = try await fixture.insertPublicApp()
            let weak = PasswordHasher(parameters: .init(logN: 3, blockSize: 8, parallelism: 1))
            let strong = PasswordHasher(parameters: .init(logN: 5, blockSize: 8, parallelism: 1))
            for (name, hasher) in [("weak", weak), ("strong", strong)] {
                let id = try await fixture.insertUser(username: name)
                let hash = try hasher.hash(AuthorizeFlowTests.password)
                try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                    try await connection.query(
                        "UPDATE users SET password_hash = \(hash) WHERE user_id = \(id)",
                        logger: fixture.database.logger)
                }
            }
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            for name in ["weak", "strong"] {
                #expect(
                    try await SignInPageSecurityTests.attempt(
                        &browser, fixture, page: page, name, AuthorizeFlowTests.password
                    ).status == 302)
            }
            func stored(_ name: String) async throws -> String {
                try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                    let rows = try await connection.query(
                        "SELECT password_hash FROM users WHERE username = \(name)", logger: fixture.database.logger)
                    for try await hash in rows.decode(String.self) { return hash }
                    return ""
                }
            }
            let upgraded = try await stored("weak")
            #expect(upgraded.hasPrefix("scrypt$\(fixture.settings.passwordHasher.parameters)$"))
            #expect(fixture.settings.passwordHasher.verify(AuthorizeFlowTests.password, against: upgraded))
            // A stronger hash than configured is never downgraded.
            #expect(try await stored("strong").hasPrefix("scrypt$ln=5,"))
            #expect(
                try await SignInPageSecurityTests.attempt(
                    &browser, fixture, page: page, "weak", AuthorizeFlowTests.password
                ).status == 302)
        }
    }

    @Test func defaultsFollowCurrentGuidance() {
        #expect(PasswordHasher().parameters == PasswordHasher.Parameters(logN: 17, blockSize: 8, parallelism: 1))
        #expect(PasswordHasher.Parameters.recommended.memoryBytes == 128 * 1024 * 1024)
        #expect((1...4).contains(PasswordHashingLimiter.defaultConcurrency))
        #expect(
            PasswordHasher(parameters: .testing).needsUpgrade(
                "scrypt$ln=3,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))
    }
}
