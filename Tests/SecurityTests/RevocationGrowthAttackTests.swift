import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// A self-signed-up user who registers and deletes clients in a loop makes a `ClientRevoked` each time. Sidecars keep
/// a revocation only while a token of the client could still pass, skip the ones that no longer matter when they
/// replay the topic at start-up, and so hold memory for the live ones only, however many came before.
@Suite struct RevocationGrowthAttackTests {
    static let redirect = DemoSeeder.dcrRedirectURI

    @Test func registerDeleteLoopsLeaveTheSidecarHoldingOnlyLiveRevocations() async throws {
        try await SeededPlatform.run(settings: ["DPOP_TOKEN_CLOCK_SKEW_SECONDS": "1"]) { platform in
            let admin = try await platform.adminToken()
            // One-second access tokens: the loop's revocations stop mattering a minute later (the issuance slack).
            try expect(
                try await platform.http.send(
                    "PUT", "\(platform.adminBase)/policy",
                    headers: platform.bearer(admin) + [("Content-Type", "application/json")],
                    body:
                        #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read","orders:write"],"branding":{"name":"Latchkey Demo"},"self_signup":true,"token_lifetimes":{"access_token":1}}"#
                ),
                200, "one-second access tokens")

            // 1. The attack over HTTP: sign up, then register and delete clients in a loop.
            let dcrToken = try await signUpForADCRToken(platform)
            let before = try await metric(platform, "latchkey_dpop_revoked_clients") ?? 0
            let loops = 20
            for index in 0..<loops {
                let registered = try expect(
                    try await platform.http.postJSON(
                        "\(platform.endpoints.gateway)/t/\(platform.endpoints.tenant)/register",
                        #"{"client_name":"loop \#(index)","redirect_uris":["\#(Self.redirect)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"scope":"\#(DemoSeeder.instanceScope)","dpop_bound_access_tokens":true}"#,
                        headers: [("Authorization", "Bearer \(dcrToken)")]), 201, "register \(index)")
                let clientID = registered.json["client_id"] as? String ?? ""
                let registrationToken = registered.json["registration_access_token"] as? String ?? ""
                try expect(
                    try await platform.http.send(
                        "DELETE", "\(platform.endpoints.gateway)/t/\(platform.endpoints.tenant)/register/\(clientID)",
                        headers: [("Authorization", "Bearer \(registrationToken)")]), 204, "delete \(index)")
            }
            let arrived = try await waitForMetric(platform, "latchkey_dpop_revoked_clients", within: .seconds(30)) {
                $0 >= before + Double(loops)
            }
            #expect(arrived, "the loop's revocations never reached the sidecar")
            // Each is kept while a token of its client could pass: one second, the slack and the skew.
            let drained = try await waitForMetric(
                platform, "latchkey_dpop_revoked_clients", within: .seconds(150)
            ) { $0 == 0 }
            #expect(drained, "revocations of clients whose tokens all expired are still held")

            // 2. The same at volume: 100k revocations on the topic, half of them over already, half live for seconds.
            await platform.processes.crash("audit-consumer")  // it would store every one of them
            let sidecarPID = try #require(platform.processes.processes["dpop-verifier"]?.pid)
            let residentBefore = try residentKilobytes(sidecarPID)
            let applied = try await metric(platform, #"latchkey_dpop_revocation_events_total{outcome="applied"}"#) ?? 0
            // In steps the sidecar keeps up with: the embedded cluster keeps only the newest records of a partition.
            var consumed = true
            try await publishRevocations(platform, count: 100_000, step: 5_000) { published in
                consumed = try await waitForMetric(
                    platform, #"latchkey_dpop_revocation_events_total{outcome="applied"}"#, within: .seconds(60)
                ) {
                    $0 >= applied + Double(published)
                }
                return consumed
            }
            #expect(consumed, "the sidecar did not read the 100k revocations")
            let held = try await metric(platform, "latchkey_dpop_revoked_clients") ?? -1
            #expect(held <= 50_000, "revocations that were over when read are held: \(held)")
            let emptied = try await waitForMetric(platform, "latchkey_dpop_revoked_clients", within: .seconds(60)) {
                $0 == 0
            }
            #expect(emptied, "expired revocations are still held")
            let residentAfter = try residentKilobytes(sidecarPID)
            // Generous (about 8 MiB here): the consumer's buffers and the allocator's arenas vary with the machine's
            // load, and keeping every entry would cost little more, which is why the entry count above is the exact check.
            #expect(
                residentAfter - residentBefore < 128 * 1024,
                "resident memory grew from \(residentBefore) to \(residentAfter) KiB")

            // 3. A restarted replica replays the whole topic (what the embedded cluster kept of it, a third or so) and
            // keeps none of it.
            let retained = try await recordsOnTopic(platform, LatchkeyEventType.clientRevoked.topic())
            await platform.processes.crash("dpop-verifier")
            try await platform.processes.start("dpop-verifier")
            #expect(try await waitUntilReady(platform), "the restarted sidecar did not finish reading the topics")
            let replayed = try await metric(platform, #"latchkey_dpop_revocation_events_total{outcome="applied"}"#) ?? 0
            #expect(replayed >= Double(retained) && retained > 10_000, "replayed \(replayed) of \(retained) records")
            #expect(
                try await metric(platform, "latchkey_dpop_revoked_clients") == 0,
                "a restarted sidecar holds revocations that no longer matter")
        }
    }

    /// Signs a new user up on the sign-up page and gets a DCR token for them (code + PKCE, scope `dcr`).
    func signUpForADCRToken(_ platform: SeededPlatform) async throws -> String {
        let verifier = PKCE.generateVerifier()
        var query = URLComponents(string: "\(platform.endpoints.issuer)/authorize")!
        query.queryItems = [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: platform.credentials.dcrClientID),
            URLQueryItem(name: "redirect_uri", value: Self.redirect), URLQueryItem(name: "scope", value: "dcr"),
            URLQueryItem(name: "state", value: "loop"),
            URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: verifier)),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
        ]
        let signIn = try expect(try await platform.http.get(query.url!.absoluteString), 200, "sign-in page")
        guard let link = signIn.body.range(of: "href=\"/t/\(platform.endpoints.tenant)/signup?") else {
            throw TestFailure("the sign-in page offers no sign-up")
        }
        let href = String(signIn.body[link.lowerBound...].dropFirst(6).prefix { $0 != "\"" }).replacingOccurrences(
            of: "&amp;", with: "&")
        let page = try expect(try await platform.http.get(platform.endpoints.tokenService + href), 200, "sign-up page")
        let username = "looper-" + UUID().uuidString.lowercased().prefix(8)
        let signedUp = try expect(
            try await platform.http.postForm(
                "\(platform.endpoints.issuer)/signup",
                [
                    ("csrf_token", page.field("csrf_token") ?? ""),
                    ("authorization_request", page.field("authorization_request") ?? ""),
                    ("username", username), ("email", "\(username)@example.com"),
                    ("password", "pass " + UUID().uuidString),
                ]), 302, "sign up")
        let code = try #require(signedUp.redirectParameters["code"], "no code after sign-up")
        let tokens = try expect(
            try await platform.http.postForm(
                platform.endpoints.tokenEndpoint,
                [
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Self.redirect),
                    ("client_id", platform.credentials.dcrClientID), ("code_verifier", verifier),
                ]), 200, "DCR token")
        return try #require(tokens.json["access_token"] as? String)
    }

    /// `count` `ClientRevoked` records straight onto the platform's topic, as the gateway's relay would write them:
    /// every other one revoked two hours ago with tokens long expired, the rest revoked now with tokens that expire
    /// in five seconds. After each `step` records, `published` is told how many went out so far; false stops.
    func publishRevocations(
        _ platform: SeededPlatform, count: Int, step: Int, published: (Int) async throws -> Bool
    ) async throws {
        let brokers = try #require(platform.processes.environment["KAFKA_BROKERS"])
        var configuration = KafkaTestSupport.configuration(brokers: brokers, clientID: "revocation-flood")
        configuration.shutdownFlushTimeout = .seconds(10)
        let producer = try KafkaProducer(configuration: configuration, logger: TestServiceSettings.logger)
        let tenant = try #require(TenantSlug(rawValue: platform.endpoints.tenant))
        let topic = LatchkeyEventType.clientRevoked.topic()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await producer.run() }
            defer { group.cancelAll() }
            for start in stride(from: 0, to: count, by: step) {
                let now = Date()
                let end = min(count, start + step)
                let batch = try (start..<end).map { index in
                    let over = index % 2 == 0
                    let revokedAt = over ? now.addingTimeInterval(-7_200) : now
                    let event = CloudEvent(
                        source: EventSource.registrationGateway,
                        data: ClientRevoked(
                            tenant: tenant, clientID: "flood-\(index)", reason: .deregistered,
                            actor: .client("flood-\(index)"),
                            revokedAt: revokedAt, accessTokensExpireAt: revokedAt.addingTimeInterval(over ? 600 : 5)))
                    return KafkaOutgoingMessage(
                        topic: topic, key: Array(event.kafkaKey.utf8), value: Array(try event.encoded()))
                }
                for result in await producer.send(batch: batch) { _ = try result.get() }
                guard try await published(end) else { break }
            }
        }
    }

    /// How many records `topic` holds (high minus low watermark over its partitions).
    func recordsOnTopic(_ platform: SeededPlatform, _ topic: String) async throws -> Int64 {
        let brokers = try #require(platform.processes.environment["KAFKA_BROKERS"])
        let configuration = KafkaTestSupport.configuration(brokers: brokers, clientID: "revocation-count")
        let admin = try KafkaAdmin(configuration: configuration, logger: TestServiceSettings.logger)
        let partitions = try #require(try await admin.metadata().topic(named: topic)).partitions
        let consumer = try KafkaConsumer(
            configuration: configuration, groupID: "revocation-count-\(UUID())",
            subscription: .allPartitions(of: [topic], startingAt: .beginning), logger: TestServiceSettings.logger)
        var total: Int64 = 0
        for partition in partitions {
            let (low, high) = try await consumer.watermarks(
                for: KafkaTopicPartition(topic: topic, partition: partition.id))
            total += high - low
        }
        await consumer.close()
        return total
    }

    /// The value of the sample `name` (with its labels, if any) on the sidecar's `/metrics`.
    func metric(_ platform: SeededPlatform, _ name: String) async throws -> Double? {
        let metrics = try await platform.http.get("\(platform.management("dpop-verifier"))/metrics")
        guard metrics.status == 200 else { throw TestFailure("/metrics answered \(metrics.status)") }
        let line = metrics.body.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line?.split(separator: " ").last.flatMap { Double($0) }
    }

    /// Polls `name` until `condition` holds; false when it still does not after `limit`.
    func waitForMetric(
        _ platform: SeededPlatform, _ name: String, within limit: Duration, _ condition: (Double) -> Bool
    ) async throws -> Bool {
        try await eventually(within: limit) {
            if let value = try await metric(platform, name) { condition(value) } else { false }
        }
    }

    func waitUntilReady(_ platform: SeededPlatform) async throws -> Bool {
        try await eventually(within: .seconds(120)) {
            (try? await platform.http.get("\(platform.management("dpop-verifier"))/readyz"))?.status == 200
        }
    }

    /// `VmRSS` of process `pid`, in KiB.
    func residentKilobytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap({
                Int($0)
            })
        else { throw TestFailure("no VmRSS for \(pid)") }
        return kilobytes
    }
}
