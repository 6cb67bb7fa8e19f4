import Configuration
import Foundation
import HTTPTypes
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore
@testable import LatchkeyKafka
@testable import LatchkeyServer

/// OpenTelemetry tracing is off unless `OTEL_TRACES_EXPORTER=otlp`: no exporter, no request spans, nothing
/// sent even with a collector endpoint configured. Checked on the settings and on the sidecar as a real
/// process (no database), whose graceful stop flushes every span it would have exported.
@Suite(.serialized) struct TracingSettingsTests {
    static func reader(_ values: [String: String]) -> SettingsReader {
        SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: values)]))
    }

    @Test func withoutSettingsTracingIsOff() throws {
        #expect(try DistributedTracing.exporter(Self.reader([:])) == .none)
        #expect(
            try DistributedTracing.bootstrap(
                service: "test", exporter: .none, headers: [], logger: TestEnvironment.logger) == nil)
        #expect(try DistributedTracing.exporter(Self.reader(["OTEL_TRACES_EXPORTER": "OTLP"])) == .otlp)
        #expect(try DistributedTracing.exporter(Self.reader(["OTEL_TRACES_EXPORTER": "none"])) == .none)
        // Supported values pass, the traces' own protocol before the shared one.
        #expect(
            try DistributedTracing.exporter(
                Self.reader([
                    "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
                    "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                    "OTEL_PROPAGATORS": "tracecontext",
                ])) == .otlp)
        // Unsupported values do not matter while tracing is off.
        #expect(
            try DistributedTracing.exporter(Self.reader(["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"])) == .none)
        // The specification's switch for the whole SDK wins over the exporter.
        #expect(
            try DistributedTracing.exporter(
                Self.reader(["OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"])) == .none)
    }

    @Test(arguments: [
        (["OTEL_TRACES_EXPORTER": "zipkin"], "OTEL_TRACES_EXPORTER must be none or otlp"),
        (["OTEL_TRACES_EXPORTER": "console"], "OTEL_TRACES_EXPORTER must be none or otlp"),
        (["OTEL_SDK_DISABLED": "maybe"], "OTEL_SDK_DISABLED must be true or false"),
        // swift-otel stops the process (fatalError) on these: they are refused with an error first.
        (
            ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"],
            "OTEL_EXPORTER_OTLP_PROTOCOL must be"
        ),
        (
            ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"],
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be"
        ),
        (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "xray"], "OTEL_TRACES_SAMPLER must be"),
        (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "jaeger_remote"], "OTEL_TRACES_SAMPLER must be"),
        (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_PROPAGATORS": "tracecontext,b3"], "OTEL_PROPAGATORS must be"),
        (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_PROPAGATORS": "baggage"], "OTEL_PROPAGATORS must be"),
    ])
    func aMisspeltSettingIsAnError(values: [String: String], message: String) {
        #expect {
            try DistributedTracing.exporter(Self.reader(values))
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func exportHeadersAreParsedWithTheSignalsOwnWinning() throws {
        let shared = ["OTEL_EXPORTER_OTLP_HEADERS": "X-Api-Key=abc%2Cdef, x-scope = latchkey"]
        let parsed = try DistributedTracing.exportHeaders(Self.reader(shared))
        #expect(parsed.map(\.0) == ["x-api-key", "x-scope"] && parsed.map(\.1) == ["abc,def", "latchkey"])
        let both = try DistributedTracing.exportHeaders(
            Self.reader(
                shared.merging(["OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Basic%20eHl6"]) { a, _ in a }))
        #expect(both.map(\.0) == ["authorization"] && both.map(\.1) == ["Basic eHl6"])
        #expect(try DistributedTracing.exportHeaders(Self.reader([:])).isEmpty)
    }

    /// A malformed header setting stops the service naming the variable, without repeating the credential.
    @Test(arguments: ["lk-secret", "x api key=lk-secret", "x-api-key=lk-secret%zz", "=lk-secret", "x=lk-secret%0A"])
    func malformedExportHeadersAreRefusedWithoutTheirValue(value: String) {
        do {
            _ = try DistributedTracing.exportHeaders(Self.reader(["OTEL_EXPORTER_OTLP_HEADERS": value]))
            Issue.record("\(value) was accepted")
        } catch {
            #expect("\(error)".contains("OTEL_EXPORTER_OTLP_HEADERS must be comma-separated name=value pairs"))
            #expect(!"\(error)".contains("lk-secret"))
        }
    }

    static func sidecarEnvironment(kafka: String, collector port: Int) -> [String: String] {
        let key = KeyMaterial.generateConfigurationValue
        return [
            // Check mode: proxied requests never reach the router, checked ones do.
            "KAFKA_BROKERS": kafka, "LOG_LEVEL": "warning", "DPOP_NONCE_SECRET": key(), "DPOP_MODE": "check",
            "DPOP_EXTERNAL_ORIGINS": "http://127.0.0.1:8083",
            "DPOP_ISSUERS": "http://127.0.0.1:8082/t/demo", "DPOP_AUDIENCES": "http://127.0.0.1:8082/t/demo",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(port)", "OTEL_BSP_SCHEDULE_DELAY": "100",
        ]
    }

    /// Runs the sidecar with `settings`, sends it a request carrying a `traceparent`, stops it gracefully and
    /// answers whether the collector got a span of that trace from it.
    func exportsRequestSpans(_ settings: [String: String]) async throws -> (
        exported: Bool, exports: Int, apiKeys: [String], output: String
    ) {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        for event in [LatchkeyEventType.clientRevoked, .tokenRevoked, .userDisabled] {
            try cluster.createTopic(event.topic(), partitions: 1)
        }
        let collector = OTLPCollector()
        return try await withLoopbackServer(collector.router) { port in
            var environment = Self.sidecarEnvironment(kafka: cluster.bootstrapServers, collector: port)
            environment.merge(settings) { _, new in new }
            let process = try ServiceProcess("dpop-verifier", environment: environment)
            let healthy = await process.waitUntilHealthy(timeout: .seconds(60))
            #expect(healthy, "\(process.capturedOutput().suffix(2_000))")
            // Ready: the revocation list is loaded, so `/check` answers with its verdict (401 without a token).
            let management = ManagementClient(port: process.managementPort)
            try await eventually("the sidecar is ready", within: .seconds(60)) {
                try await management.execute(uri: "/readyz").status == .ok
            }
            let trace = OTLPCollector.newTraceparent()
            let client = try await RawClient.connect(port: process.port)
            await client.send("GET /check HTTP/1.1\r\nHost: 127.0.0.1\r\ntraceparent: \(trace.header)\r\n\r\n")
            let answered = await client.waitFor(.seconds(10)) { $0.status != nil }
            client.close()
            #expect(answered && client.status == 401, "\(client.received.prefix(300))")
            // Stopping flushes the span processor: whatever tracing would export has been sent when it exits.
            let status = await process.stop()
            #expect(status == 0, "\(process.capturedOutput().suffix(2_000))")
            return (
                collector.exported(traceID: trace.traceID, by: "dpop-verifier"), collector.exports,
                collector.receivedAPIKeys, process.capturedOutput()
            )
        }
    }

    @Test func withACollectorConfiguredButNoExporterNothingIsSent() async throws {
        let off = try await exportsRequestSpans([:])
        #expect(!off.exported && off.exports == 0)
        let disabled = try await exportsRequestSpans(["OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"])
        #expect(!disabled.exported && disabled.exports == 0)
    }

    /// A collector's credential (`OTEL_EXPORTER_OTLP_HEADERS`, or the file `OTEL_EXPORTER_OTLP_HEADERS_FILE`
    /// names, as mounted from a Secret) goes with every export and never into the logs, at the default level.
    @Test(arguments: [false, true])
    func collectorCredentialsReachTheCollectorAndNeverTheLogs(fromFile: Bool) async throws {
        let sentinel = "lk-otlp-" + UUID().uuidString
        let headers = "x-api-key=\(sentinel),x-scope=latchkey"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-headers-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        var settings = ["OTEL_TRACES_EXPORTER": "otlp", "LOG_LEVEL": "info"]
        if fromFile {
            try Data((headers + "\n").utf8).write(to: file)
            settings["OTEL_EXPORTER_OTLP_HEADERS_FILE"] = file.path
        } else {
            settings["OTEL_EXPORTER_OTLP_HEADERS"] = headers
        }
        let run = try await exportsRequestSpans(settings)
        #expect(run.exported, "no span of the request's trace (\(run.exports) exports)")
        #expect(!run.apiKeys.isEmpty && run.apiKeys.allSatisfy { $0 == sentinel }, "\(run.apiKeys)")
        #expect(!run.output.contains(sentinel), "the collector's credential appears in the logs")
        #expect(run.output.contains("info"), "the process logged nothing at info: the check would prove nothing")
    }

    @Test func withTheOTLPExporterRequestSpansContinueTheCallersTrace() async throws {
        let on = try await exportsRequestSpans(["OTEL_TRACES_EXPORTER": "otlp"])
        #expect(on.exported, "no span of the request's trace from dpop-verifier (\(on.exports) exports)")
    }
}
