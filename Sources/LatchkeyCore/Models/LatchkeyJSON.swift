import Foundation

/// The JSON coders every Latchkey model and event is meant to go through.
///
/// Dates are RFC 3339 strings (see `RFC3339Timestamp`), keys are sorted so the same value always
/// produces the same bytes (events are hashed by the audit log), and `/` is not escaped so URIs
/// stay readable. Coders are created per call because `JSONEncoder` is not `Sendable`.
public enum LatchkeyJSON {
    public static func makeEncoder(prettyPrinted: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        var formatting: JSONEncoder.OutputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if prettyPrinted { formatting.insert(.prettyPrinted) }
        encoder.outputFormatting = formatting
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339Timestamp.string(from: date))
        }
        return encoder
    }

    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = RFC3339Timestamp.date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an RFC 3339 date-time")
            }
            return date
        }
        return decoder
    }

    /// Encodes `value` as `makeEncoder()` does, byte for byte (through `CompactJSONEncoder` when it can).
    public static func encode(_ value: some Encodable) throws -> Data {
        if let data = try CompactJSONEncoder.encode(value, dates: .rfc3339) { return data }
        return try makeEncoder().encode(value)
    }

    /// Decodes `type` from `data` with `makeDecoder()`.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try makeDecoder().decode(type, from: data)
    }
}

extension DecodingError {
    /// A one-line message naming the JSON path, fit for an `error_description` or a log line,
    /// e.g. `grant_types[1]: unknown grant type "foo"; expected one of …`.
    public var readableDescription: String {
        let (path, message): ([any CodingKey], String)
        switch self {
        case .typeMismatch(let type, let context):
            (path, message) = (context.codingPath, "expected \(Self.jsonTypeName(type))")
        case .valueNotFound(let type, let context):
            (path, message) = (context.codingPath, "expected \(Self.jsonTypeName(type)), found null")
        case .keyNotFound(let key, let context):
            (path, message) = (context.codingPath + [key], "required member is missing")
        case .dataCorrupted(let context):
            let reason = context.debugDescription.isEmpty ? "invalid value" : context.debugDescription
            (path, message) = (context.codingPath, reason)
        @unknown default:
            return String(describing: self)
        }
        let location = Self.jsonPath(path)
        return location.isEmpty ? message : "\(location): \(message)"
    }

    static func jsonPath(_ path: [any CodingKey]) -> String {
        var result = ""
        for key in path {
            if let index = key.intValue {
                result += "[\(index)]"
            } else {
                result += result.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return result
    }

    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type: return "an integer"
        case is Double.Type, is Float.Type: return "a number"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array") || name.hasPrefix("[") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "a value of type \(name)"
        }
    }
}
