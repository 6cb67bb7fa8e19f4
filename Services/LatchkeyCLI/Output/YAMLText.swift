import LatchkeyCore
import Yams

/// YAML for GitOps documents, read and written with the JSON data model.
///
/// Reading follows the YAML 1.2 core schema: only `true`/`false` are booleans, `null`, `~` and an empty value are
/// null, and dates, `yes`, `no`, `on` or `off` stay strings, so a hand-written file means what it shows. Anchors,
/// aliases and `<<` merge keys work; a key may appear once per mapping; a file holds one document.
/// Writing quotes every string that a YAML 1.1 reader (PyYAML, older Kubernetes tooling) would take for
/// something else, and sorts members like the JSON export, so both diff cleanly.
enum YAMLText {
    /// The YAML 1.2 core schema's tags; everything else is a string.
    private static let coreSchema = [
        try! Resolver.Rule(.bool, "^(?:true|True|TRUE|false|False|FALSE)$"),
        try! Resolver.Rule(.null, "^(?:~|null|Null|NULL|)$"),
        try! Resolver.Rule(.int, "^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        try! Resolver.Rule(
            .float,
            "^(?:[-+]?(?:\\.[0-9]+|[0-9]+(?:\\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN))$"
        ),
        Resolver.Rule.merge,
    ].reduce(Resolver.basic) { $0.appending($1) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ text: String) throws -> JSONValue {
        var documents: [Node] = []
        do {
            var sequence = try Yams.compose_all(yaml: text, Self.coreSchema)
            while let document = sequence.next() { documents.append(document) }
            if let error = sequence.error { throw error }
        } catch {
            throw Failure(description: "not valid YAML: \(error)")
        }
        guard documents.count == 1, let document = documents.first else {
            throw Failure(description: "expected one YAML document, found \(documents.count)")
        }
        return try value(document, path: "$")
    }

    static func render(_ value: JSONValue) -> String {
        // A value that is not a container cannot fail to serialize; the fallback keeps the signature total.
        (try? Yams.serialize(node: node(value), indent: 2, width: -1, allowUnicode: true, sortKeys: false))
            ?? PrettyJSON.string(value) + "\n"
    }

    // MARK: Reading

    private static func value(_ node: Node, path: String) throws -> JSONValue {
        switch node {
        case .scalar(let scalar):
            return try scalarValue(scalar, path: path)
        case .sequence(let sequence):
            return .array(try sequence.enumerated().map { try value($1, path: "\(path)[\($0)]") })
        case .mapping(let mapping):
            return .object(try members(mapping, path: path))
        case .alias:
            throw Failure(description: "\(path): an alias that refers to nothing")
        }
    }

    private static func members(_ mapping: Node.Mapping, path: String) throws -> [String: JSONValue] {
        var own: [String: JSONValue] = [:]
        var merged: [String: JSONValue] = [:]
        for (keyNode, valueNode) in mapping {
            if Self.coreSchema.resolveTag(of: keyNode) == .merge {
                // `<<: *base` or `<<: [*a, *b]`: members not set here come from the mappings, earlier ones first.
                let sources = valueNode.sequence.map(Array.init) ?? [valueNode]
                for source in sources {
                    guard let sourceMapping = source.mapping else {
                        throw Failure(description: "\(path): a `<<` merge key needs a mapping or a list of mappings")
                    }
                    for (key, member) in try members(sourceMapping, path: path) where merged[key] == nil {
                        merged[key] = member
                    }
                }
                continue
            }
            guard case .scalar(let keyScalar) = keyNode else {
                throw Failure(description: "\(path): a mapping key must be a scalar")
            }
            let key = keyScalar.string
            guard own[key] == nil else { throw Failure(description: "\(path): the key \"\(key)\" appears twice") }
            own[key] = try value(valueNode, path: "\(path).\(key)")
        }
        return merged.merging(own) { $1 }
    }

    private static func scalarValue(_ scalar: Node.Scalar, path: String) throws -> JSONValue {
        let text = scalar.string
        switch Self.coreSchema.resolveTag(of: .scalar(scalar)) {
        case .null: return .null
        case .bool: return .bool(text.first == "t" || text.first == "T")
        case .int:
            let sign: Double = text.hasPrefix("-") ? -1 : 1
            let digits = text.trimmingPrefix { $0 == "-" || $0 == "+" }
            let parsed: Int64? =
                digits.hasPrefix("0x")
                ? Int64(digits.dropFirst(2), radix: 16)
                : digits.hasPrefix("0o") ? Int64(digits.dropFirst(2), radix: 8) : Int64(digits, radix: 10)
            guard let parsed else { throw Failure(description: "\(path): the integer \(text) is too large") }
            return .number(sign * Double(parsed))
        case .float:
            guard let number = Double(text), number.isFinite else {
                throw Failure(description: "\(path): \(text) has no JSON equivalent")
            }
            return .number(number)
        case .str:
            return .string(text)
        default:
            throw Failure(description: "\(path): the tag \(Node.scalar(scalar).tag.rawValue) is not supported")
        }
    }

    // MARK: Writing

    private static func node(_ value: JSONValue) -> Node {
        switch value {
        case .null: return Node("null")
        case .bool(let flag): return Node(flag ? "true" : "false")
        case .number(let number): return Node(CanonicalJSON.formatNumber(number))
        case .string(let text):
            return Node(text, .implicit, needsQuotes(text) ? .doubleQuoted : .any)
        case .array(let elements):
            return Node(elements.map(node))
        case .object(let members):
            return Node(
                members.sorted { $0.key < $1.key }.map { (Node($0.key, .implicit, keyStyle($0.key)), node($0.value)) })
        }
    }

    private static func keyStyle(_ key: String) -> Node.Scalar.Style { needsQuotes(key) ? .doubleQuoted : .any }

    /// Whether a plain scalar with this text would be read back, here or by a YAML 1.1 reader, as anything but
    /// this string.
    private static func needsQuotes(_ text: String) -> Bool {
        for resolver in [Self.coreSchema, Resolver.default] where resolver.resolveTag(of: Node(text)) != .str {
            return true
        }
        return false
    }
}
