import BenchmarkSupport
import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import Logging
import PostgresNIO

// Drives the release `audit-consumer` binary with the embedded Kafka cluster and a scratch
// PostgreSQL database, and prints one JSON object of measurements:
//   1. throughput: BENCH_EVENTS events (over BENCH_TENANTS tenants) produced before the consumer
//      starts; rate = rows stored between the first and the last batch / that time (from stored_at);
//   2. end-to-end delay: with the consumer caught up, BENCH_RATE events/s for BENCH_SECONDS seconds,
//      each stamped with `time` just before it is sent; delay = stored_at − time per row (p50/p99/max).
// Environment: DATABASE_MIGRATION_URL, DATABASE_URL, DATABASE_SYSTEM_URL (the scratch database),
// AUDIT_CONSUMER_BINARY, AUDIT_CONSUMER_LOG, and the optional BENCH_* knobs.

extension Bench {
    static var logger: Logger { makeLogger("audit-bench") }
}

/// Typed events of every kind, as the services produce them.
func makeEvents(count: Int, tenants: [String], clientsPerTenant: Int) throws -> [KafkaOutgoingMessage] {
    var messages: [KafkaOutgoingMessage] = []
    messages.reserveCapacity(count)
    for index in 0..<count {
        let tenant = TenantSlug(rawValue: tenants[index % tenants.count])!
        let clientNumber = (index / tenants.count) % clientsPerTenant
        let client = "client-\(clientNumber)"
        let user = UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", clientNumber % 97))!
        messages.append(
            try message(index: index / tenants.count / clientsPerTenant, tenant: tenant, client: client, user: user))
    }
    return messages
}

func message(index: Int, tenant: TenantSlug, client: String, user: UUID, time: Date = Date()) throws
    -> KafkaOutgoingMessage
{
    func outgoing<P: EventPayload>(_ payload: P, _ source: String) throws -> KafkaOutgoingMessage {
        let event = CloudEvent(source: source, time: time, data: payload)
        return KafkaOutgoingMessage(
            topic: event.topic(), key: Array(event.kafkaKey.utf8), value: Array(try event.encoded()),
            headers: [KafkaHeader(key: "content-type", value: CloudEvents.contentType)])
    }
    switch index % 8 {
    case 0:
        return try outgoing(
            ClientRegistered(
                tenant: tenant, clientID: client, clientName: "Device \(client)", applicationType: .native,
                clientType: .confidential, tokenEndpointAuthMethod: .clientSecretBasic,
                grantTypes: [.authorizationCode, .refreshToken], redirectURIs: ["com.example.app:/cb"],
                scope: "openid offline_access", softwareID: "example-app", templateID: "example-app",
                authenticatedUser: user, registrationMechanism: .userToken, dpopBoundAccessTokens: true,
                actor: .user(user)), EventSource.registrationGateway)
    case 6:
        return try outgoing(
            ClientUpdated(
                tenant: tenant, clientID: client, changedFields: ["client_name"], authenticatedUser: user,
                actor: .client(client)), EventSource.registrationGateway)
    case 7:
        return try outgoing(
            ClientRevoked(
                tenant: tenant, clientID: client, reason: .admin, reasonDetail: "benchmark", authenticatedUser: user,
                actor: .admin("bench"), revokedAt: time), EventSource.registrationGateway)
    default:
        return try outgoing(
            TokenIssued(
                tenant: tenant, clientID: client, userID: user, grantType: .refreshToken,
                scope: "openid offline_access",
                jti: UUID().uuidString, jkt: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
                tokenTypes: [.access, .refresh],
                expiresAt: time.addingTimeInterval(300), refreshFamilyID: "fam-\(client)", actor: .user(user)),
            EventSource.tokenService)
    }
}

/// Sends every message concurrently and waits for all delivery reports.
func produce(_ messages: [KafkaOutgoingMessage], with producer: KafkaProducer) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for message in messages {
            group.addTask { _ = try await producer.send(message) }
        }
        try await group.waitForAll()
    }
}

func count(_ database: PostgresClient, tenantPrefix: String) async throws -> Int {
    let rows = try await database.query(
        "SELECT count(*)::int8 FROM audit_events WHERE tenant_id LIKE \(tenantPrefix + "%")", logger: Bench.logger)
    for try await value in rows.decode(Int64.self) { return Int(value) }
    return 0
}

/// Waits for `expected` rows; gives up after `timeout`, or after 30 s without progress.
func waitForRows(_ database: PostgresClient, tenantPrefix: String, count expected: Int, timeout: Duration) async throws
{
    let deadline = ContinuousClock.now + timeout
    var last = -1
    var lastProgress = ContinuousClock.now
    while ContinuousClock.now < deadline, ContinuousClock.now - lastProgress < .seconds(30) {
        let current = try await count(database, tenantPrefix: tenantPrefix)
        if current >= expected { return }
        if current != last { (last, lastProgress) = (current, .now) }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw BenchError("only \(last) of \(expected) rows stored")
}

func startConsumer(binary: String, brokers: String, port: Int, log: String) throws -> Process {
    try Bench.startProcess(
        binary: binary,
        environment: [
            "KAFKA_BROKERS": brokers, "HTTP_PORT": String(port),
            "LOG_LEVEL": Bench.environment["BENCH_CONSUMER_LOG_LEVEL"] ?? "warning",
        ], log: log)
}

func run() async throws -> [String: Any] {
    let events = Bench.setting("BENCH_EVENTS", 100_000)
    let tenantCount = Bench.setting("BENCH_TENANTS", 20)
    let rate = Bench.setting("BENCH_RATE", 2_000)
    let latencySeconds = Bench.setting("BENCH_SECONDS", 20)
    // The mock cluster keeps at most about 5 MB per partition and drops older records beyond
    // that, so a 100,000-event backlog needs enough partitions to stay below it.
    let partitions = Bench.setting("BENCH_PARTITIONS", 16)
    let binary = try Bench.required("AUDIT_CONSUMER_BINARY")
    let consumerLog = Bench.environment["AUDIT_CONSUMER_LOG"] ?? "/tmp/audit-consumer-bench.log"
    let owner = try DatabaseConfiguration(url: try Bench.required("DATABASE_MIGRATION_URL")).onDemand
    var system = try DatabaseConfiguration(url: try Bench.required("DATABASE_SYSTEM_URL")).onDemand
    system.statementTimeoutMilliseconds = 60_000

    let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: Bench.logger)
    defer { cluster.shutdown() }
    for topic in LatchkeyEventType.allTopics() { try cluster.createTopic(topic, partitions: partitions) }
    try cluster.createTopic("latchkey.dead-letter", partitions: 1)

    let ownerClient = owner.makeClient(logger: Bench.logger)
    let database = system.makeClient(logger: Bench.logger)
    var configuration = KafkaConfiguration(
        bootstrapServers: cluster.bootstrapServers, clientID: "audit-bench", statisticsInterval: nil)
    configuration.properties["queue.buffering.max.messages"] = "1000000"
    let producer = try KafkaProducer(configuration: configuration, logger: Bench.logger)

    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await ownerClient.run() }
        group.addTask { await database.run() }
        group.addTask { try await producer.run() }
        defer { group.cancelAll() }
        try await Migrator(logger: Bench.logger).migrate(client: ownerClient)

        // Phase 1: a backlog, consumed as fast as the consumer can.
        let tenants = (0..<tenantCount).map { "bench-\($0)" }
        let generated = ContinuousClock.now
        let backlog = try makeEvents(count: events, tenants: tenants, clientsPerTenant: 200)
        let generation = ContinuousClock.now - generated
        let produceStart = ContinuousClock.now
        try await produce(backlog, with: producer)
        let produceTime = ContinuousClock.now - produceStart

        let consumerStart = ContinuousClock.now
        let consumer = try startConsumer(
            binary: binary, brokers: cluster.bootstrapServers, port: 18_084, log: consumerLog)
        defer { if consumer.isRunning { consumer.terminate() } }
        try await waitForRows(database, tenantPrefix: "bench-", count: events, timeout: .seconds(600))
        let wallClock = ContinuousClock.now - consumerStart
        let throughputRows = try await database.query(
            """
            SELECT count(*) FILTER (WHERE stored_at > first)::int8,
                   extract(epoch FROM max(stored_at) - first)::float8
            FROM audit_events, (SELECT min(stored_at) AS first FROM audit_events WHERE tenant_id LIKE 'bench-%') f
            WHERE tenant_id LIKE 'bench-%' GROUP BY first
            """, logger: Bench.logger)
        var afterFirstBatch: Int64 = 0
        var window = 0.0
        for try await (rows, seconds) in throughputRows.decode((Int64, Double).self) {
            afterFirstBatch = rows
            window = seconds
        }

        // Phase 2: a steady stream, delay from each event's time to its row.
        let latencyTenants = (0..<tenantCount).map { "lat-\($0)" }
        let perTick = max(1, rate / 100)
        var sent = 0
        let streamStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { senders in
            for tick in 0..<(latencySeconds * 100) {
                let due = streamStart + .milliseconds(tick * 10)
                if due > .now { try await Task.sleep(until: due) }
                var batch: [KafkaOutgoingMessage] = []
                for _ in 0..<perTick {
                    let tenant = TenantSlug(rawValue: latencyTenants[sent % latencyTenants.count])!
                    let client = "client-\(sent % 500)"
                    batch.append(
                        try message(
                            index: sent, tenant: tenant, client: client,
                            user: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", sent % 97))!))
                    sent += 1
                }
                senders.addTask { try await produce(batch, with: producer) }
            }
            try await senders.waitForAll()
        }
        let streamTime = ContinuousClock.now - streamStart
        try await waitForRows(database, tenantPrefix: "lat-", count: sent, timeout: .seconds(120))
        let delays = try await database.query(
            """
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::float8, percentile_cont(0.99) WITHIN GROUP (ORDER BY d)::float8,
                   max(d)::float8
            FROM (SELECT extract(epoch FROM stored_at - event_time)::float8 AS d FROM audit_events
                  WHERE tenant_id LIKE 'lat-%') delays
            """, logger: Bench.logger)
        var p50 = 0.0
        var p99 = 0.0
        var worst = 0.0
        for try await (median, high, maximum) in delays.decode((Double, Double, Double).self) {
            (p50, p99, worst) = (median, high, maximum)
        }
        consumer.terminate()
        consumer.waitUntilExit()
        return [
            "events": events, "tenants": tenantCount, "partitions_per_topic": partitions,
            "generation_seconds": Bench.seconds(generation),
            "produce_seconds": Bench.seconds(produceTime),
            "consumer_wall_seconds_including_start_and_group_join": Bench.seconds(wallClock),
            "ingest_window_seconds": window, "ingest_rows_in_window": afterFirstBatch,
            "ingest_events_per_second": window > 0 ? Double(afterFirstBatch) / window : 0,
            "stream_rate_target": rate, "stream_events": sent,
            "stream_rate_achieved": Double(sent) / Bench.seconds(streamTime),
            "delay_p50_ms": p50 * 1000, "delay_p99_ms": p99 * 1000, "delay_max_ms": worst * 1000,
        ]
    }
}

await Bench.report("audit", run)
