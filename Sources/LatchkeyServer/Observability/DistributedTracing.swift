import Foundation
import HTTPTypes
import LatchkeyCore
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry tracing, off unless `OTEL_TRACES_EXPORTER=otlp` (and `OTEL_SDK_DISABLED` is not true): spans
/// then go to an OTLP/HTTP collector configured by the standard `OTEL_*` variables as swift-otel reads them
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`,
/// …), except the export headers, read here (``exportHeaders(_:)``) because they carry credentials. Logs and
/// metrics stay on the process's own backends.
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

    /// The headers sent with every export: `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS`,
    /// each also from a file (`…_FILE`, e.g. a mounted Secret), as `key=value` pairs separated by commas with
    /// percent-encoded values, as the OpenTelemetry specification defines them. They usually hold the
    /// collector's credentials, so errors name the variable and never repeat its value.
    public static func exportHeaders(_ env: SettingsReader) throws -> [(String, String)] {
        let (text, name): (String?, String) =
            if let traces = try env.secretText("otel.exporter.otlp.traces.headers") {
                (traces, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            } else {
                (try env.secretText("otel.exporter.otlp.headers"), "OTEL_EXPORTER_OTLP_HEADERS")
            }
        guard let text else { return [] }
        return try text.split(separator: ",").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, HTTPField.Name(parts[0]) != nil,
                let value = parts[1].removingPercentEncoding,
                value.unicodeScalars.allSatisfy({ $0 == "\t" || (0x20..<0x7F).contains($0.value) })
            else {
                throw ConfigurationError(
                    "\(name) must be comma-separated name=value pairs (header names, percent-encoded visible ASCII values)"
                )
            }
            return (parts[0].lowercased(), value)
        }
    }

    static let supportedSamplers: Set<String> = [
        "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
        "parentbased_traceidratio",
    ]

    /// Makes the process's tracer export spans when `exporter` is `otlp`, named after `service` unless
    /// `OTEL_SERVICE_NAME` says otherwise; returns the service that batches and exports them, to run with the
    /// application (stopping it flushes the last spans). Call once per process; nil when tracing is off, and
    /// then the tracer stays the no-op one.
    public static func bootstrap(
        service: String, exporter: Exporter, headers: [(String, String)], logger: Logger
    ) throws -> (any Service)? {
        guard exporter == .otlp else { return nil }
        // The SDK would read the header variables again and report their values in its diagnostics.
        for variable in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] { unsetenv(variable) }
        var configuration = OTel.Configuration.default
        configuration.serviceName = service
        configuration.diagnosticLogger = .custom(OTelDiagnosticsRedaction.wrapping(logger))
        configuration.traces.otlpExporter.headers = headers
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
