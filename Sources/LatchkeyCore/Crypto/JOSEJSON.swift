import Foundation

/// Small JSON helpers shared by the JOSE types.
enum JOSEJSON {
    /// Cheap structural pre-check: the first non-whitespace byte opens an object.
    static func looksLikeObject(_ data: Data) -> Bool {
        for byte in data {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            case UInt8(ascii: "{"): return true
            default: return false
            }
        }
        return false
    }

    static func parse(_ data: Data, what: String) throws(JOSEError) -> [String: Any] {
        guard looksLikeObject(data),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw .malformed("\(what) is not a JSON object")
        }
        return object
    }

    /// Compact, deterministic output (sorted keys); slashes unescaped so URLs in claims stay readable.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A short, log-safe description of a decoding failure (member name, not values).
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath.map(\.stringValue) + (key.map { [$0.stringValue] } ?? [])
            return keys.isEmpty ? "document" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \(path(context, key))"
        case .valueNotFound(_, let context): return "null \(path(context))"
        case .typeMismatch(_, let context): return "wrong type for \(path(context))"
        case .dataCorrupted(let context): return context.codingPath.isEmpty ? "invalid JSON" : "invalid \(path(context))"
        @unknown default: return "invalid JSON"
        }
    }
}
