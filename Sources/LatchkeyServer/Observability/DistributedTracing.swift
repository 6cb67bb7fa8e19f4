import Logging
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry tracing, off unless `OTEL_TRACES_EXPORTER=otlp` (and `OTEL_SDK_DISABLED` is not true): spans
/// then go to an OTLP/HTTP collector configured by the standard `OTEL_*` variables as swift-otel reads them
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
/// `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, …). Logs and metrics stay on the process's own backends.
public enum DistributedTracing {
    /// `OTEL_TRACES_EXPORTER`: `none` (default) or `otlp`.
    public enum Exporter: String, Sendable {
        case none
        case otlp
    }

    /// The exporter the settings ask for: `none` unless `OTEL_TRACES_EXPORTER=otlp`, and `none` whenever
    /// `OTEL_SDK_DISABLED` is true, as the OpenTelemetry specification defines it. With `otlp`, the settings
    /// swift-otel would answer with a crash (a protocol, sampler or propagator it does not build in) are
    /// refused here, naming the variable.
    public static func exporter(_ env: SettingsReader) throws -> Exporter {
        let exporter = try env.parse("otel.traces.exporter", default: Exporter.none, expected: "none or otlp") {
            Exporter(rawValue: $0.lowercased())
        }
        guard try !env.flag("otel.sdk.disabled", default: false), exporter == .otlp else { return .none }
        let protocols = ["http/protobuf", "http/json"]
        let expectedProtocol = "http/protobuf or http/json (only OTLP over HTTP is built in)"
        // The signal's own setting wins over the shared one, as swift-otel reads them.
        if env.text("otel.exporter.otlp.traces.protocol") != nil {
            _ = try env.parse("otel.exporter.otlp.traces.protocol", default: "", expected: expectedProtocol) {
                protocols.contains($0.lowercased()) ? $0 : nil
            }
        } else {
            _ = try env.parse("otel.exporter.otlp.protocol", default: "", expected: expectedProtocol) {
                protocols.contains($0.lowercased()) ? $0 : nil
            }
        }
        _ = try env.parse(
            "otel.traces.sampler", default: "",
            expected:
                "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"
        ) { supportedSamplers.contains($0.lowercased()) ? $0 : nil }
        _ = try env.parse("otel.propagators", default: "", expected: "tracecontext or none") { value in
            value.split(separator: ",", omittingEmptySubsequences: false)
                .allSatisfy { ["tracecontext", "none"].contains($0.lowercased()) } ? value : nil
        }
        return .otlp
    }

    static let supportedSamplers: Set<String> = [
        "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
        "parentbased_traceidratio",
    ]

    /// Makes the process's tracer export spans when `exporter` is `otlp`, named after `service` unless
    /// `OTEL_SERVICE_NAME` says otherwise; returns the service that batches and exports them, to run with the
    /// application (stopping it flushes the last spans). Call once per process; nil when tracing is off, and
    /// then the tracer stays the no-op one.
    public static func bootstrap(service: String, exporter: Exporter, logger: Logger) throws -> (any Service)? {
        guard exporter == .otlp else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = service
        configuration.diagnosticLogger = .custom(logger)
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
    }

    /// Query parameters that can carry credentials or personal data: request spans record them as
    /// `REDACTED`. Headers are not recorded at all.
    public static let redactedQueryParameters: Set<String> = [
        "code", "state", "nonce", "code_verifier", "code_challenge", "client_secret", "client_assertion", "token",
        "access_token", "refresh_token", "id_token", "authorization_request", "login_hint", "id_token_hint",
        "request", "request_uri", "username", "password", "email", "assertion", "subject_token", "actor_token",
        "error_description",
    ]
}
