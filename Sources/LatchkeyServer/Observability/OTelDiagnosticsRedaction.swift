import Logging

/// The diagnostics of the OpenTelemetry SDK report each `OTEL_*` variable they apply together with its
/// value, and some values carry credentials (`OTEL_EXPORTER_OTLP_HEADERS` usually holds the collector's API
/// key or authorization), so those values are replaced before anything is logged.
struct OTelDiagnosticsRedaction: LogHandler {
    static let valueKeys: Set<String> = ["environment_value", "previous_value", "new_value"]
    static let replacement: Logger.Metadata.Value = "<redacted>"

    var wrapped: any LogHandler

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = Self.redacted(newValue) }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set {
            wrapped[metadataKey: key] = newValue != nil && Self.valueKeys.contains(key) ? Self.replacement : newValue
        }
    }

    func log(event: LogEvent) {
        var event = event
        event.metadata = event.metadata.map(Self.redacted)
        wrapped.log(event: event)
    }

    static func redacted(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.reduce(into: [:]) { result, entry in
            result[entry.key] = valueKeys.contains(entry.key) ? replacement : entry.value
        }
    }

    /// `logger` with its handler wrapped.
    static func wrapping(_ logger: Logger) -> Logger {
        let handler = OTelDiagnosticsRedaction(wrapped: logger.handler)
        return Logger(label: logger.label, factory: { _ in handler })
    }
}
