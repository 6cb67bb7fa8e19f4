import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A swift-log handler writing one JSON object per line (`LOG_FORMAT=json`), for log collectors that
/// parse structured lines: `timestamp` (RFC 3339, UTC, milliseconds), `level`, `service`, `logger`,
/// `source`, `message`, then the metadata flattened (nested keys joined with dots). Metadata named like
/// one of those fields is written under `metadata.<key>` instead of replacing it.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info
    let label: String
    let service: String
    let sink: JSONLogSink

    public init(label: String, service: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.init(label: label, service: service, metadataProvider: metadataProvider, sink: .standardError)
    }

    init(label: String, service: String, metadataProvider: Logger.MetadataProvider?, sink: JSONLogSink) {
        self.label = label
        self.service = service
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        sink.emit(line(event, metadata: merged, timestamp: Self.timestamp()))
    }

    static let reservedKeys: Set<String> = ["timestamp", "level", "service", "logger", "source", "message"]

    /// The JSON line of `event`, without its newline.
    func line(_ event: LogEvent, metadata: Logger.Metadata, timestamp: String) -> String {
        let fields: [(String, String)] = [
            ("timestamp", timestamp), ("level", event.level.rawValue), ("service", service), ("logger", label),
            ("source", event.source), ("message", event.message.description),
        ]
        var flat: [(String, Logger.MetadataValue)] = []
        Self.flatten(metadata, prefix: "", into: &flat)
        var out = "{"
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { out += "," }
            Self.appendString(key, to: &out)
            out += ":"
            Self.appendString(value, to: &out)
        }
        for (key, value) in flat.sorted(by: { $0.0 < $1.0 }) {
            out += ","
            Self.appendString(Self.reservedKeys.contains(key) ? "metadata." + key : key, to: &out)
            out += ":"
            Self.appendValue(value, to: &out)
        }
        out += "}"
        return out
    }

    /// Dictionaries become dotted keys; arrays stay JSON arrays.
    static func flatten(
        _ metadata: Logger.Metadata, prefix: String, into flat: inout [(String, Logger.MetadataValue)]
    ) {
        for (key, value) in metadata {
            let name = prefix.isEmpty ? key : prefix + "." + key
            if case .dictionary(let nested) = value {
                flatten(nested, prefix: name, into: &flat)
            } else {
                flat.append((name, value))
            }
        }
    }

    static func appendValue(_ value: Logger.MetadataValue, to out: inout String) {
        switch value {
        case .string(let string):
            appendString(string, to: &out)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &out)
        case .array(let values):
            out += "["
            for (index, element) in values.enumerated() {
                if index > 0 { out += "," }
                appendValue(element, to: &out)
            }
            out += "]"
        case .dictionary(let nested):
            out += "{"
            for (index, (key, element)) in nested.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                appendValue(element, to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string literal (RFC 8259 §7): quote, backslash and control characters escaped, so a message
    /// carrying a newline still makes one line.
    static func appendString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// Now as `2026-01-31T12:34:56.789Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return timestamp(seconds: now.tv_sec, milliseconds: Int(now.tv_nsec / 1_000_000))
    }

    static func timestamp(seconds: time_t, milliseconds: Int) -> String {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis =
            milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }
}

/// Where JSON lines go: standard error (like the text format), or a buffer in tests.
final class JSONLogSink: Sendable {
    static let standardError = JSONLogSink(capture: false)

    private let captures: Bool
    /// The captured lines (tests); also the lock that keeps lines of concurrent tasks from interleaving.
    private let captured = Mutex<[String]>([])

    init(capture: Bool) {
        captures = capture
    }

    func emit(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        captured.withLock { lines in
            if captures {
                lines.append(line)
                return
            }
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        return  // standard error is gone: nothing else can report it
                    }
                }
            }
        }
    }

    var lines: [String] { captured.withLock { $0 } }
}

/// `LOG_FORMAT`: today's text lines (swift-log's stream handler on standard error) or JSON lines.
public enum LogFormat: String, Sendable {
    case text
    case json

    /// Makes every logger of the process use this format; call once, before any logger is made.
    public func bootstrap(service: String) {
        switch self {
        case .text: LoggingSystem.bootstrap { label in TextLogHandler(label: label) }
        case .json: LoggingSystem.bootstrap { label in JSONLogHandler(label: label, service: service) }
        }
    }
}
