import Foundation

/// One compiled (sub)schema: every assertion keyword it carries, already parsed.
final class SchemaNode: Sendable {
    /// `true` / `false` schemas, or a schema object.
    enum Kind: Sendable {
        case acceptAll
        case rejectAll
        case assertions
    }

    let kind: Kind
    let types: [SchemaType]?
    let constant: JSONValue?
    let enumeration: [JSONValue]?
    let required: [String]
    let properties: [String: SchemaNode]
    let additionalProperties: SchemaNode?
    let propertyNames: SchemaNode?
    let items: SchemaNode?
    let minItems: Int?
    let maxItems: Int?
    let uniqueItems: Bool
    let minLength: Int?
    let maxLength: Int?
    let patterns: [SchemaPattern]
    let format: SchemaFormat?
    let minimum: Double?
    let maximum: Double?
    let not: SchemaNode?
    let allOf: [SchemaNode]
    let anyOf: [SchemaNode]
    let oneOf: [SchemaNode]

    init(
        kind: Kind, types: [SchemaType]? = nil, constant: JSONValue? = nil, enumeration: [JSONValue]? = nil,
        required: [String] = [], properties: [String: SchemaNode] = [:], additionalProperties: SchemaNode? = nil,
        propertyNames: SchemaNode? = nil, items: SchemaNode? = nil, minItems: Int? = nil, maxItems: Int? = nil,
        uniqueItems: Bool = false, minLength: Int? = nil, maxLength: Int? = nil, patterns: [SchemaPattern] = [],
        format: SchemaFormat? = nil, minimum: Double? = nil, maximum: Double? = nil, not: SchemaNode? = nil,
        allOf: [SchemaNode] = [], anyOf: [SchemaNode] = [], oneOf: [SchemaNode] = []
    ) {
        self.kind = kind
        self.types = types
        self.constant = constant
        self.enumeration = enumeration
        self.required = required
        self.properties = properties
        self.additionalProperties = additionalProperties
        self.propertyNames = propertyNames
        self.items = items
        self.minItems = minItems
        self.maxItems = maxItems
        self.uniqueItems = uniqueItems
        self.minLength = minLength
        self.maxLength = maxLength
        self.patterns = patterns
        self.format = format
        self.minimum = minimum
        self.maximum = maximum
        self.not = not
        self.allOf = allOf
        self.anyOf = anyOf
        self.oneOf = oneOf
    }

    /// The first failed assertion for `value` at `path`, or nil. With `explain` false the error
    /// carries no path or message: subschemas of `not`, `anyOf` and `oneOf` only need a yes or no,
    /// and building messages for every expected mismatch would dominate the cost of validation.
    func validate(_ value: JSONValue, path: inout [PathComponent], explain: Bool = true) -> JSONSchema.ValidationError?
    {
        switch kind {
        case .acceptAll: return nil
        case .rejectAll: return fail(path, explain, "no value is allowed here")
        case .assertions: break
        }
        if let types, !types.contains(where: { $0.admits(value) }) {
            return fail(
                path, explain,
                "expected \(types.map(\.rawValue).joined(separator: " or ")), found \(Self.typeName(value))")
        }
        if let constant, constant != value {
            return fail(path, explain, "must be \(Self.render(constant))")
        }
        if let enumeration, !enumeration.contains(value) {
            return fail(path, explain, "must be one of \(enumeration.map(Self.render).joined(separator: ", "))")
        }
        switch value {
        case .object(let members):
            if let error = validateObject(members, path: &path, explain: explain) { return error }
        case .array(let elements):
            if let error = validateArray(elements, path: &path, explain: explain) { return error }
        case .string(let text):
            if let error = validateString(text, path: path, explain: explain) { return error }
        case .number(let number):
            if let minimum, number < minimum {
                return fail(path, explain, "must be at least \(Self.render(.number(minimum)))")
            }
            if let maximum, number > maximum {
                return fail(path, explain, "must be at most \(Self.render(.number(maximum)))")
            }
        case .null, .bool:
            break
        }
        return validateCombinators(value, path: &path, explain: explain)
    }

    private func validateObject(
        _ members: [String: JSONValue], path: inout [PathComponent], explain: Bool
    ) -> JSONSchema.ValidationError? {
        for name in required where members[name] == nil {
            path.append(.member(name))
            defer { path.removeLast() }
            return fail(path, explain, "required member is missing")
        }
        // Sorted so the reported error does not depend on dictionary order.
        for name in explain ? members.keys.sorted() : Array(members.keys) {
            guard let member = members[name] else { continue }
            path.append(.member(name))
            defer { path.removeLast() }
            if let propertyNames, let error = propertyNames.validate(.string(name), path: &path, explain: explain) {
                return explain
                    ? JSONSchema.ValidationError(path: error.path, message: "member name \(error.message)") : error
            }
            if let schema = properties[name] {
                if let error = schema.validate(member, path: &path, explain: explain) { return error }
            } else if let additionalProperties {
                if case .rejectAll = additionalProperties.kind {
                    return fail(path, explain, "member is not allowed")
                }
                if let error = additionalProperties.validate(member, path: &path, explain: explain) { return error }
            }
        }
        return nil
    }

    private func validateArray(
        _ elements: [JSONValue], path: inout [PathComponent], explain: Bool
    ) -> JSONSchema.ValidationError? {
        if let minItems, elements.count < minItems {
            return fail(path, explain, "must have at least \(minItems) items")
        }
        if let maxItems, elements.count > maxItems { return fail(path, explain, "must have at most \(maxItems) items") }
        if uniqueItems, Set(elements).count != elements.count { return fail(path, explain, "items must be unique") }
        if let items {
            for (index, element) in elements.enumerated() {
                path.append(.index(index))
                defer { path.removeLast() }
                if let error = items.validate(element, path: &path, explain: explain) { return error }
            }
        }
        return nil
    }

    private func validateString(_ text: String, path: [PathComponent], explain: Bool) -> JSONSchema.ValidationError? {
        if minLength != nil || maxLength != nil {
            // JSON Schema counts characters as Unicode code points.
            let length = text.unicodeScalars.count
            if let minLength, length < minLength {
                return fail(path, explain, "must be at least \(minLength) characters")
            }
            if let maxLength, length > maxLength {
                return fail(path, explain, "must be at most \(maxLength) characters")
            }
        }
        for pattern in patterns where !pattern.matches(text) {
            return fail(path, explain, "does not match the pattern \(pattern.source)")
        }
        if let format, !format.admits(text) { return fail(path, explain, "is not a valid \(format.rawValue)") }
        return nil
    }

    private func validateCombinators(
        _ value: JSONValue, path: inout [PathComponent], explain: Bool
    ) -> JSONSchema.ValidationError? {
        if let not, not.validate(value, path: &path, explain: false) == nil {
            return fail(path, explain, "matches a schema it must not match")
        }
        for schema in allOf {
            if let error = schema.validate(value, path: &path, explain: explain) { return error }
        }
        if !anyOf.isEmpty, !anyOf.contains(where: { $0.validate(value, path: &path, explain: false) == nil }) {
            return fail(path, explain, "matches none of the allowed schemas")
        }
        if !oneOf.isEmpty, oneOf.filter({ $0.validate(value, path: &path, explain: false) == nil }).count != 1 {
            return fail(path, explain, "must match exactly one of the allowed schemas")
        }
        return nil
    }

    private static let unexplained = JSONSchema.ValidationError(path: "", message: "invalid")

    private func fail(
        _ path: [PathComponent], _ explain: Bool, _ message: @autoclosure () -> String
    ) -> JSONSchema.ValidationError {
        explain ? JSONSchema.ValidationError(path: PathComponent.render(path), message: message()) : Self.unexplained
    }

    static func typeName(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// A short rendering of a schema constant for messages (long values are cut).
    static func render(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return "\"\(text.prefix(80))\""
        case .number(let number):
            return number.rounded(.towardZero) == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .bool(let flag): return String(flag)
        case .null: return "null"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
