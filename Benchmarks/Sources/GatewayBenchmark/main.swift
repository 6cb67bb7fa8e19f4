import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import Logging
import PostgresNIO

// Drives the release `registration-gateway` binary (its outbox relay publishing to the embedded Kafka
// cluster) on a scratch PostgreSQL database and prints one JSON object of measurements:
//   1. full-metadata registrations, closed loop over BENCH_CONNECTIONS connections, BENCH_SECONDS s, sent
//      by `wrk` (BENCH_WRK_SCRIPT) after a short unmeasured warm-up;
//   2. templatized registrations (software_id + client_name), the same way;
//   3. a paced phase at BENCH_PACED_PERCENT % of phase 1's rate for BENCH_PACED_SECONDS s (AsyncHTTPClient:
//      latency counts from each request's due time, which `wrk` cannot do);
// and for each phase the delay from the outbox row's created_at to the relay's acknowledgement
// (sent_at) and to the record arriving at a consumer of the ClientRegistered topic.
// Environment: DATABASE_MIGRATION_URL, DATABASE_URL, DATABASE_SYSTEM_URL (the scratch database),
// GATEWAY_BINARY, GATEWAY_LOG, and the optional BENCH_* knobs.

func waitUntilReady(_ client: HTTPClient, port: Int, process: Process) async throws {
    for _ in 0..<300 {
        guard process.isRunning else { throw BenchError("the gateway exited; see its log") }
        if let response = try? await client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port + 1000)/readyz"), timeout: .seconds(2)),
            response.status == .ok
        {
            return
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw BenchError("the gateway did not become ready")
}

/// Peak resident set size of a process, in MiB (VmHWM).
func peakRSS(pid: Int32) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes / 1024
}

func run() async throws -> [String: Any] {
    let connections = Bench.setting("BENCH_CONNECTIONS", 8)
    let seconds = Bench.setting("BENCH_SECONDS", 15)
    let pacedSeconds = Bench.setting("BENCH_PACED_SECONDS", 10)
    let pacedPercent = Bench.setting("BENCH_PACED_PERCENT", 50)
    let idleSeconds = Bench.setting("BENCH_IDLE_SECONDS", 60)
    let port = Bench.setting("BENCH_GATEWAY_PORT", 18_181)
    let binary = try Bench.required("GATEWAY_BINARY")
    let wrkScript = try Bench.required("BENCH_WRK_SCRIPT")
    let gatewayLog = Bench.environment["GATEWAY_LOG"] ?? "/tmp/registration-gateway-bench.log"
    let owner = try DatabaseConfiguration(url: try Bench.required("DATABASE_MIGRATION_URL")).onDemand
    let app = try DatabaseConfiguration(url: try Bench.required("DATABASE_URL")).onDemand
    let system = try DatabaseConfiguration(url: try Bench.required("DATABASE_SYSTEM_URL")).onDemand
    let hashKey = KeyMaterial.generateConfigurationValue()
    let topic = LatchkeyEventType.defaultTopicPrefix + LatchkeyEventType.clientRegistered.topicSuffix

    let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: Bench.logger)
    defer { cluster.shutdown() }
    for name in LatchkeyEventType.allTopics() { try cluster.createTopic(name, partitions: 4) }

    let ownerClient = owner.makeClient(logger: Bench.logger)
    let appClient = app.makeClient(logger: Bench.logger)
    let systemClient = system.makeClient(logger: Bench.logger)
    // pg_stat_statements is installed in the `postgres` database (scripts/postgres.sh).
    var statistics = owner
    statistics.database = "postgres"
    let statsClient = statistics.makeClient(logger: Bench.logger)
    let http = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: HTTPClient.Configuration(
            connectionPool: .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)))
    var consumerConfiguration = KafkaConfiguration(
        bootstrapServers: cluster.bootstrapServers, clientID: "gateway-bench", statisticsInterval: nil)
    // librdkafka's default lets a fetch wait up to 500 ms for data, which would be measured as delay.
    consumerConfiguration.properties["fetch.wait.max.ms"] = "5"
    let consumer = try KafkaConsumer(
        configuration: consumerConfiguration,
        groupID: "gateway-bench-\(UUID().uuidString)",
        subscription: .allPartitions(of: [topic], startingAt: .beginning),
        logger: Bench.logger)
    let consumed = ConsumedEvents()

    return try await withThrowingTaskGroup(of: Void.self) { group in
        for client in [ownerClient, appClient, systemClient, statsClient] { group.addTask { await client.run() } }
        group.addTask { try await consumed.collect(from: consumer) }
        defer { group.cancelAll() }
        try await Migrator(logger: Bench.logger).migrate(client: ownerClient)
        let tokens = try await Seeding.seed(
            Database(client: appClient, logger: Bench.logger), hasher: try KeyedHasher(configuration: hashKey),
            connections: connections)

        let gateway = try Bench.startProcess(
            binary: binary,
            environment: [
                "KAFKA_BROKERS": cluster.bootstrapServers, "HTTP_PORT": String(port),
                "LOG_LEVEL": Bench.environment["BENCH_GATEWAY_LOG_LEVEL"] ?? "warning",
                "REGISTRATION_GATEWAY_PUBLIC_URL": "http://127.0.0.1:\(port)",
                "TOKEN_SERVICE_PUBLIC_URL": "http://127.0.0.1:1",
                "SECRET_HASH_KEY": hashKey,
            ], log: gatewayLog)
        defer { if gateway.isRunning { gateway.terminate() } }
        try await waitUntilReady(http, port: port, process: gateway)
        let idleRSS = peakRSS(pid: gateway.processIdentifier)

        let path = "/t/\(Seeding.tenant)/register"
        let load = RegistrationLoad(client: http, url: "http://127.0.0.1:\(port)\(path)", tokens: tokens)
        func wrk(seconds: Int) -> WrkPhase {
            WrkPhase(
                script: wrkScript, url: "http://127.0.0.1:\(port)", threads: connections, connections: connections,
                seconds: Double(seconds), directory: FileManager.default.temporaryDirectory)
        }
        let fullRequests = ClosedLoopRequests.perThread(path: path, tokens: tokens, body: Bodies.full)
        let templateRequests = ClosedLoopRequests.perThread(path: path, tokens: tokens, body: Bodies.template)
        let meter = Meter(
            servicePID: gateway.processIdentifier,
            postmasterPID: Int32(Bench.environment["BENCH_POSTMASTER_PID"] ?? "") ?? 0, statsClient: statsClient,
            databaseName: owner.database, logger: Bench.logger)
        var costs: [String: Meter.Cost] = [:]
        /// A warm-up (connections, caches, the pool at its load) and then the measured closed loop.
        func closedLoop(_ name: String, _ requests: [[WrkPhase.Request]]) async throws -> PhaseSummary {
            _ = try wrk(seconds: 2).run(name: "\(name) warm-up", .cycling(requests))
            let start = await meter.read()
            let result = try wrk(seconds: seconds).run(name: name, .cycling(requests))
            costs[name] = meter.cost(from: start, to: await meter.read())
            return PhaseSummary(name, wrk: result)
        }
        let full = try await closedLoop("full", fullRequests)
        let templated = try await closedLoop("template", templateRequests)
        let rate = max(1, full.perSecond * Double(pacedPercent) / 100)
        let paced = PhaseSummary(
            "paced", paced: await load.paced(rate: rate, duration: .seconds(pacedSeconds), body: Bodies.full))

        // Every registration's event must reach the consumer before the delays are read.
        let written = try await OutboxQueries.count(systemClient, topic: topic)
        let deadline = ContinuousClock.now + .seconds(120)
        while await consumed.count < written, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let times = try await OutboxQueries.times(systemClient, topic: topic)
        let arrivals = await consumed.arrivals
        // The idle gateway, every periodic job running (relay, client expiry, sweeps), its outbox drained.
        let idleStart = await meter.read()
        try await Task.sleep(for: .seconds(idleSeconds))
        let idle = meter.cost(from: idleStart, to: await meter.read())
        let peak = peakRSS(pid: gateway.processIdentifier)
        gateway.terminate()
        gateway.waitUntilExit()
        await consumer.close()
        try await http.shutdown()

        var result: [String: Any] = [
            "connections": connections, "seconds_per_phase": seconds, "events_written": written,
            "events_consumed": arrivals.count,
            "gateway_rss_idle_mib": idleRSS, "gateway_rss_peak_mib": peak,
            "gateway_exit_status": Int(gateway.terminationStatus),
            "paced_rate_target": rate, "paced_percent_of_full_peak": pacedPercent,
            "idle_seconds": idleSeconds,
            "idle_service_cpu_ms_per_minute": idle.serviceCPU * 1_000 * 60 / Double(max(idleSeconds, 1)),
            "idle_postgres_cpu_ms_per_minute": idle.postgresCPU * 1_000 * 60 / Double(max(idleSeconds, 1)),
        ]
        if let statements = idle.statements {
            result["idle_statements_per_minute"] = Double(statements) * 60 / Double(max(idleSeconds, 1))
        }
        for (name, phase) in [("full", full), ("template", templated), ("paced", paced)] {
            result["\(name)_registrations_per_second"] = phase.perSecond
            result["\(name)_completed"] = phase.completed
            result["\(name)_failed"] = phase.failed
            if !phase.failures.isEmpty { result["\(name)_failures"] = phase.failures }
            result.merge(phase.latencyJSON) { $1 }
            if let generator = phase.generatorCPUMicroseconds { result["\(name)_generator_cpu_us"] = generator }
            let delays = OutboxQueries.delays(times, arrivals: arrivals, window: phase.window)
            result.merge(delays.relay.millisecondsJSON("\(name)_outbox_to_ack")) { $1 }
            result.merge(delays.consumed.millisecondsJSON("\(name)_outbox_to_consumer")) { $1 }
            result["\(name)_events_not_consumed"] = delays.missing
            if let cost = costs[name]?.per(phase.sent) {
                result["\(name)_service_cpu_us"] = cost.serviceMicroseconds
                result["\(name)_postgres_cpu_us"] = cost.postgresMicroseconds
                if let statements = cost.statements { result["\(name)_statements"] = statements }
            }
        }
        return result
    }
}

await Bench.report("gateway", run)
