import Foundation

/// Validates whole CloudEvents against the shipped JSON Schema of their `type`, at runtime.
///
/// Schemas are compiled once (``JSONSchema``); validation is allocation-light and safe to share
/// across tasks. A consumer that must never store an event the schema refuses (audit) runs this
/// on every record; tests cross-check it against the reference Python validator.
public struct EventSchemaValidator: Sendable {
    private let schemas: [LatchkeyEventType: JSONSchema]

    /// Compiles the schema resource of every event type; throws when one is missing or unsupported.
    public init() throws {
        var schemas: [LatchkeyEventType: JSONSchema] = [:]
        for type in LatchkeyEventType.allCases {
            schemas[type] = try JSONSchema(data: EventSchemas.data(for: type))
        }
        self.schemas = schemas
    }

    /// The compiled schema of `type`.
    public func schema(for type: LatchkeyEventType) -> JSONSchema? {
        schemas[type]
    }

    /// The first schema violation of `event` as a `type` event, or nil when it is valid.
    public func firstError(in event: JSONValue, as type: LatchkeyEventType) -> JSONSchema.ValidationError? {
        guard let schema = schemas[type] else {
            return JSONSchema.ValidationError(path: "type", message: "no schema for \(type.rawValue)")
        }
        return schema.firstError(in: event)
    }
}
