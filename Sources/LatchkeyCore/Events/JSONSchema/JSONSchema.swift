import Foundation

/// A compiled JSON Schema (draft 2020-12) for the keyword subset Latchkey's event schemas use.
///
/// Supported: `type`, `const`, `enum`, `required`, `properties`, `additionalProperties`,
/// `propertyNames`, `items`, `minItems`, `maxItems`, `uniqueItems`, `minLength`, `maxLength`,
/// `pattern`, `minimum`, `maximum`, `not`, `allOf`, `anyOf`, `oneOf`, local `$ref`
/// (`#/$defs/...`), and `format` `date-time` and `uuid` (asserted, as the tests' reference validator
/// does). Annotations are ignored. Any other keyword makes compilation fail, so a schema change
/// that needs more is noticed at start-up instead of being silently half-validated.
public final class JSONSchema: Sendable {
    /// A schema the compiler does not understand.
    public struct CompilationError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "\(path.isEmpty ? "(root)" : path): \(reason)" }
    }

    /// One failed assertion, with the JSON path of the offending value (`data.client_id`).
    public struct ValidationError: Error, Sendable, CustomStringConvertible, Equatable {
        public var path: String
        public var message: String
        public var description: String { "\(path.isEmpty ? "(root)" : path): \(message)" }
    }

    let node: SchemaNode

    init(node: SchemaNode) {
        self.node = node
    }

    /// Compiles a schema document.
    public convenience init(document: JSONValue) throws {
        let definitions = document["$defs"]?.objectValue ?? [:]
        var compiler = SchemaCompiler(definitions: definitions)
        self.init(node: try compiler.compile(document, path: ""))
    }

    /// Compiles a schema from its JSON bytes.
    public convenience init(data: Data) throws {
        try self.init(document: StrictJSONParser.parse([UInt8](data)))
    }

    /// The first error found, or nil when `instance` is valid.
    public func firstError(in instance: JSONValue) -> ValidationError? {
        var path: [PathComponent] = []
        return node.validate(instance, path: &path)
    }

    /// Throws the first error found.
    public func validate(_ instance: JSONValue) throws(ValidationError) {
        if let error = firstError(in: instance) { throw error }
    }
}

/// A path step while validating; rendered only when an error is reported.
enum PathComponent {
    case member(String)
    case index(Int)

    static func render(_ path: [PathComponent]) -> String {
        var text = ""
        for component in path {
            switch component {
            case .member(let name): text += text.isEmpty ? name : ".\(name)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }
}

/// The JSON types a `type` keyword names.
enum SchemaType: String, Sendable {
    case null, boolean, object, array, number, string, integer

    func admits(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.null, .null), (.boolean, .bool), (.object, .object), (.array, .array), (.number, .number),
            (.string, .string):
            return true
        case (.integer, .number(let number)):
            return number.rounded(.towardZero) == number
        default:
            return false
        }
    }
}

/// Formats asserted by the validator.
enum SchemaFormat: String, Sendable {
    /// 8-4-4-4-12 hex digits (either case), checked by hand: `UUID(uuidString:)` costs a `sscanf`.
    static func isUUID(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            switch index {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return false }
            default:
                guard byte.isASCIIHexDigit else { return false }
            }
        }
        return true
    }

    case dateTime = "date-time"
    case uuid

    func admits(_ text: String) -> Bool {
        switch self {
        case .dateTime: return RFC3339Timestamp.date(from: text) != nil
        case .uuid: return Self.isUUID(text)
        }
    }
}
