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

    /// The members of a header or payload, read by ``StrictJSONParser`` like every JSON document from
    /// outside: duplicate members (which another reader could resolve to a different value), broken
    /// UTF-8, lone surrogates and out-of-range numbers are refused.
    static func members(_ bytes: [UInt8], what: String) throws(JOSEError) -> [String: JSONValue] {
        let value: JSONValue
        do { value = try StrictJSONParser.parse(bytes) } catch { throw .malformed("\(what): \(error.reason)") }
        guard case .object(let members) = value else { throw .malformed("\(what) is not a JSON object") }
        return members
    }

    /// A dictionary of a document the strict parser accepts (then Foundation can only read it the same way).
    static func parse(_ data: Data, what: String) throws(JOSEError) -> [String: Any] {
        _ = try members(Array(data), what: what)
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw .malformed("\(what) is not a JSON object")
        }
        return object
    }

    /// An optional string member; `null` means absent, any other type is refused.
    static func optionalString(_ members: [String: JSONValue], _ name: String, in what: String) throws(JOSEError)
        -> String?
    {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case _?: throw .malformed("\(what): wrong type for \(name)")
        }
    }

    /// Compact, deterministic output (sorted keys); slashes unescaped so URLs in claims stay readable.
    static func encode(_ value: some Encodable) throws -> Data {
        if let data = try CompactJSONEncoder.encode(value, dates: .deferredToDate) { return data }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
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
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "invalid JSON" : "invalid \(path(context))"
        @unknown default: return "invalid JSON"
        }
    }
}
