import Foundation

/// Turns a schema document into ``SchemaNode``s, resolving local `$ref`s by inlining them.
struct SchemaCompiler {
    /// Keywords that only annotate; they never affect validity.
    private static let annotations: Set<String> = [
        "$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default", "deprecated",
        "readOnly", "writeOnly",
    ]
    private static let assertions: Set<String> = [
        "type", "const", "enum", "required", "properties", "additionalProperties", "propertyNames", "items",
        "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "format", "minimum",
        "maximum", "not", "allOf", "anyOf", "oneOf", "$ref",
    ]

    let definitions: [String: JSONValue]
    private var resolving: [String] = []

    init(definitions: [String: JSONValue]) {
        self.definitions = definitions
    }

    mutating func compile(_ schema: JSONValue, path: String) throws(JSONSchema.CompilationError) -> SchemaNode {
        switch schema {
        case .bool(true): return SchemaNode(kind: .acceptAll)
        case .bool(false): return SchemaNode(kind: .rejectAll)
        case .object(let keywords): return try compileObject(keywords, path: path)
        default: throw error(path, "a schema must be an object or a boolean")
        }
    }

    private mutating func compileObject(
        _ keywords: [String: JSONValue], path: String
    ) throws(JSONSchema.CompilationError) -> SchemaNode {
        for name in keywords.keys where !Self.annotations.contains(name) && !Self.assertions.contains(name) {
            throw error(path, "unsupported keyword \(name)")
        }
        if let reference = keywords["$ref"] {
            // 2020-12 allows siblings of $ref; these schemas only annotate next to it.
            for name in keywords.keys where name != "$ref" && Self.assertions.contains(name) {
                throw error(path, "keyword \(name) next to $ref is not supported")
            }
            return try resolve(reference, path: path)
        }
        var properties: [String: SchemaNode] = [:]
        for (name, subschema) in keywords["properties"]?.objectValue ?? [:] {
            properties[name] = try compile(subschema, path: join(path, "properties/\(name)"))
        }
        return SchemaNode(
            kind: .assertions,
            types: try types(keywords["type"], path: path),
            constant: keywords["const"],
            enumeration: try array(keywords["enum"], "enum", path: path),
            required: try strings(keywords["required"], path: path),
            properties: properties,
            additionalProperties: try subschema(keywords["additionalProperties"], "additionalProperties", path),
            propertyNames: try subschema(keywords["propertyNames"], "propertyNames", path),
            items: try subschema(keywords["items"], "items", path),
            minItems: try count(keywords["minItems"], "minItems", path),
            maxItems: try count(keywords["maxItems"], "maxItems", path),
            uniqueItems: keywords["uniqueItems"]?.boolValue ?? false,
            minLength: try count(keywords["minLength"], "minLength", path),
            maxLength: try count(keywords["maxLength"], "maxLength", path),
            patterns: try pattern(keywords["pattern"], path: path),
            format: keywords["format"]?.stringValue.flatMap(SchemaFormat.init(rawValue:)),
            minimum: keywords["minimum"]?.doubleValue,
            maximum: keywords["maximum"]?.doubleValue,
            not: try subschema(keywords["not"], "not", path),
            allOf: try subschemas(keywords["allOf"], "allOf", path),
            anyOf: try subschemas(keywords["anyOf"], "anyOf", path),
            oneOf: try subschemas(keywords["oneOf"], "oneOf", path))
    }

    private mutating func resolve(_ reference: JSONValue, path: String) throws(JSONSchema.CompilationError)
        -> SchemaNode
    {
        let prefix = "#/$defs/"
        guard let target = reference.stringValue, target.hasPrefix(prefix) else {
            throw error(path, "only local references (#/$defs/name) are supported")
        }
        let name = String(target.dropFirst(prefix.count))
        guard let definition = definitions[name] else { throw error(path, "unknown definition \(name)") }
        guard !resolving.contains(name) else { throw error(path, "recursive reference to \(name)") }
        resolving.append(name)
        defer { resolving.removeLast() }
        return try compile(definition, path: "$defs/\(name)")
    }

    private mutating func subschema(
        _ value: JSONValue?, _ keyword: String, _ path: String
    ) throws(JSONSchema.CompilationError) -> SchemaNode? {
        guard let value else { return nil }
        return try compile(value, path: join(path, keyword))
    }

    private mutating func subschemas(
        _ value: JSONValue?, _ keyword: String, _ path: String
    ) throws(JSONSchema.CompilationError) -> [SchemaNode] {
        guard let value else { return [] }
        guard let list = value.arrayValue, !list.isEmpty else {
            throw error(path, "\(keyword) must be a non-empty array")
        }
        var nodes: [SchemaNode] = []
        for (index, element) in list.enumerated() {
            nodes.append(try compile(element, path: join(path, "\(keyword)/\(index)")))
        }
        return nodes
    }

    private func types(_ value: JSONValue?, path: String) throws(JSONSchema.CompilationError) -> [SchemaType]? {
        guard let value else { return nil }
        let names = value.stringValue.map { [$0] } ?? value.arrayValue?.compactMap(\.stringValue) ?? []
        let types = names.compactMap(SchemaType.init(rawValue:))
        guard !types.isEmpty, types.count == names.count else { throw error(path, "invalid type keyword") }
        return types
    }

    private func array(_ value: JSONValue?, _ keyword: String, path: String) throws(JSONSchema.CompilationError)
        -> [JSONValue]?
    {
        guard let value else { return nil }
        guard let list = value.arrayValue else { throw error(path, "\(keyword) must be an array") }
        return list
    }

    private func strings(_ value: JSONValue?, path: String) throws(JSONSchema.CompilationError) -> [String] {
        guard let value else { return [] }
        guard let list = value.arrayValue?.compactMap(\.stringValue), list.count == value.arrayValue?.count else {
            throw error(path, "required must be an array of strings")
        }
        return list
    }

    private func count(_ value: JSONValue?, _ keyword: String, _ path: String) throws(JSONSchema.CompilationError)
        -> Int?
    {
        guard let value else { return nil }
        guard let number = value.doubleValue, number >= 0, number.rounded() == number, number < 1e9 else {
            throw error(path, "\(keyword) must be a non-negative integer")
        }
        return Int(number)
    }

    private func pattern(_ value: JSONValue?, path: String) throws(JSONSchema.CompilationError) -> [SchemaPattern] {
        guard let value else { return [] }
        guard let source = value.stringValue else { throw error(path, "pattern must be a string") }
        do {
            return [try SchemaPattern(source)]
        } catch {
            throw self.error(path, "pattern \(source) does not compile")
        }
    }

    private func join(_ path: String, _ step: String) -> String {
        path.isEmpty ? step : "\(path)/\(step)"
    }

    private func error(_ path: String, _ reason: String) -> JSONSchema.CompilationError {
        JSONSchema.CompilationError(path: path, reason: reason)
    }
}
