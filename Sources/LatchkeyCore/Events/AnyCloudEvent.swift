import Foundation

/// A structured-mode CloudEvent read without knowing its payload type: what a consumer of every
/// topic (audit) or a dead-letter handler looks at before, or instead of, typed decoding.
///
/// Only the attributes CloudEvents 1.0 requires (`specversion`, `id`, `source`, `type`) must be
/// present; other attributes, including unknown extensions, are kept in `extensions`.
public struct AnyCloudEvent: Sendable, Hashable {
    public var specVersion: String
    public var id: String
    public var source: String
    public var type: String
    /// The `time` attribute exactly as sent.
    public var time: String?
    public var subject: String?
    public var dataContentType: String?
    public var tenantID: String?
    public var data: JSONValue?
    /// Every other attribute, by name.
    public var extensions: [String: JSONValue]

    /// The Latchkey event type, when `type` is one.
    public var eventType: LatchkeyEventType? { LatchkeyEventType(rawValue: type) }

    /// `tenantid` when it is a valid tenant slug.
    public var tenant: TenantSlug? { tenantID.flatMap(TenantSlug.init(rawValue:)) }

    /// `time` parsed, when present and well-formed.
    public var timeDate: Date? { time.flatMap(RFC3339Timestamp.date(from:)) }

    /// Reads any structured-mode CloudEvent.
    public static func decode(from data: Data) throws -> AnyCloudEvent {
        try LatchkeyJSON.decode(AnyCloudEvent.self, from: data)
    }

    /// The typed event; fails when `type`, tenant or payload do not match `payload`.
    public func decode<P: EventPayload>(as payload: P.Type) throws -> CloudEvent<P> {
        try CloudEvent<P>.decode(from: LatchkeyJSON.encode(self))
    }
}

extension AnyCloudEvent: Codable {
    private struct AttributeName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let knownAttributes: Set<String> = [
        "specversion", "id", "source", "type", "time", "subject", "datacontenttype", "tenantid", "data",
    ]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AttributeName.self)
        specVersion = try c.decode(String.self, forKey: AttributeName("specversion"))
        id = try c.decode(String.self, forKey: AttributeName("id"))
        source = try c.decode(String.self, forKey: AttributeName("source"))
        type = try c.decode(String.self, forKey: AttributeName("type"))
        time = try c.decodeIfPresent(String.self, forKey: AttributeName("time"))
        subject = try c.decodeIfPresent(String.self, forKey: AttributeName("subject"))
        dataContentType = try c.decodeIfPresent(String.self, forKey: AttributeName("datacontenttype"))
        tenantID = try c.decodeIfPresent(String.self, forKey: AttributeName("tenantid"))
        data = try c.decodeIfPresent(JSONValue.self, forKey: AttributeName("data"))
        var extensions: [String: JSONValue] = [:]
        for key in c.allKeys where !Self.knownAttributes.contains(key.stringValue) {
            extensions[key.stringValue] = try c.decode(JSONValue.self, forKey: key)
        }
        self.extensions = extensions
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AttributeName.self)
        for (name, value) in extensions where !Self.knownAttributes.contains(name) {
            try c.encode(value, forKey: AttributeName(name))
        }
        try c.encode(specVersion, forKey: AttributeName("specversion"))
        try c.encode(id, forKey: AttributeName("id"))
        try c.encode(source, forKey: AttributeName("source"))
        try c.encode(type, forKey: AttributeName("type"))
        try c.encodeIfPresent(time, forKey: AttributeName("time"))
        try c.encodeIfPresent(subject, forKey: AttributeName("subject"))
        try c.encodeIfPresent(dataContentType, forKey: AttributeName("datacontenttype"))
        try c.encodeIfPresent(tenantID, forKey: AttributeName("tenantid"))
        try c.encodeIfPresent(data, forKey: AttributeName("data"))
    }
}
