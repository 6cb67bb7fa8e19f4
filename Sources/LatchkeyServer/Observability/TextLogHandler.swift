import Logging

/// The text log format: swift-log's stream handler on standard error, with the same lines. The stream
/// handler formats its whole metadata each time one key is set; every request sets some (request id,
/// tenant) and most requests never log, so this handler keeps the metadata as it is and has it formatted
/// only when a line is written.
public struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    public init(label: String) {
        stream = StreamLogHandler.standardError(label: label)
    }

    init(wrapping stream: StreamLogHandler) {
        self.stream = stream
    }

    public var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard !metadata.isEmpty else { return stream.log(event: event) }
        // The stream handler's order: its own metadata, then the provider's, then the call's.
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        var event = event
        event.metadata = merged
        stream.log(event: event)
    }
}
