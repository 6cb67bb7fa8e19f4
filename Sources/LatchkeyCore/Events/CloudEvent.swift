import Foundation

/// Constants of the CloudEvents 1.0 structured JSON format as Latchkey uses it.
public enum CloudEvents {
    public static let specVersion = "1.0"
    /// Content type of a whole structured-mode event (Kafka `content-type` header, HTTP body).
    public static let contentType = "application/cloudevents+json"
    /// `datacontenttype` of every Latchkey event: `data` is a JSON object.
    public static let dataContentType = "application/json"
}

/// A Latchkey event in the CloudEvents 1.0 structured JSON envelope, typed by its payload.
///
/// `subject` and `tenantid` are derived from the payload so they cannot disagree with it;
/// decoding checks they still agree, so a tampered or misrouted event is refused rather than
/// filed under the wrong tenant. Encode with `encoded()` (or `LatchkeyJSON`): it sorts keys and
/// writes every date as RFC 3339, which the schemas require.
public struct CloudEvent<Payload: EventPayload>: Sendable {
    /// Unique per event; consumers deduplicate on it.
    public let id: String
    /// The producing service, e.g. `EventSource.registrationGateway`.
    public let source: String
    /// When the occurrence happened, UTC, microsecond precision.
    public let time: Date
    /// The client id (user id for user events).
    public let subject: String
    /// The `tenantid` extension attribute.
    public let tenantID: TenantSlug
    public let data: Payload
    /// The distributed-tracing extension attribute: the W3C `traceparent` of the operation that caused the
    /// event, so that consumers continue its trace. Only a valid value is kept (``Traceparent/isValid(_:)``).
    public var traceparent: String? {
        didSet { if traceparent != nil, Traceparent.validated(traceparent) == nil { traceparent = nil } }
    }

    /// A new event with a fresh random id (written lower-case, as PostgreSQL prints UUIDs).
    public init(id: UUID = RandomUUID.make(), source: String, time: Date = Date(), data: Payload) {
        self.init(id: id.lowercasedString, source: source, time: time, data: data)
    }

    /// An event with an id chosen by the caller, e.g. one already stored in an outbox row.
    public init(id: String, source: String, time: Date = Date(), data: Payload) {
        self.id = id
        self.source = source
        self.time = RFC3339Timestamp.normalized(time)
        self.subject = data.eventSubject
        self.tenantID = data.tenant
        self.data = data
    }

    public var type: LatchkeyEventType { Payload.eventType }

    /// `id` as a UUID, when it is one (always, for events Latchkey produced).
    public var uuid: UUID? { UUID(uuidString: id) }

    /// The Kafka message key `{tenant}/{subject}`.
    public var kafkaKey: String { LatchkeyEventType.kafkaKey(tenant: tenantID, clientID: subject) }

    /// The Kafka topic for this event under `prefix`.
    public func topic(prefix: String = LatchkeyEventType.defaultTopicPrefix) -> String {
        type.topic(prefix: prefix)
    }

    /// The structured-mode JSON bytes: same event, same bytes.
    public func encoded() throws -> Data {
        try LatchkeyJSON.encode(self)
    }

    /// Decodes an event of this payload type; fails on another `type`, spec version or tenant.
    public static func decode(from data: Data) throws -> CloudEvent {
        try LatchkeyJSON.decode(CloudEvent.self, from: data)
    }
}

extension CloudEvent: Equatable where Payload: Equatable {}
extension CloudEvent: Hashable where Payload: Hashable {}

extension CloudEvent: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case specversion, id, source, type, time, subject, datacontenttype, tenantid, data, traceparent
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let specVersion = try c.decode(String.self, forKey: .specversion)
        guard specVersion == CloudEvents.specVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .specversion, in: c, debugDescription: "unsupported CloudEvents specversion \"\(specVersion)\"")
        }
        let type = try c.decode(String.self, forKey: .type)
        guard type == Payload.eventType.rawValue else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: c,
                debugDescription: "expected type \"\(Payload.eventType.rawValue)\", got \"\(type)\"")
        }
        if let contentType = try c.decodeIfPresent(String.self, forKey: .datacontenttype),
            !Self.isJSONMediaType(contentType)
        {
            throw DecodingError.dataCorruptedError(
                forKey: .datacontenttype, in: c, debugDescription: "data content type \"\(contentType)\" is not JSON")
        }
        id = try c.decode(String.self, forKey: .id)
        guard !id.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .id, in: c, debugDescription: "event id is empty")
        }
        source = try c.decode(String.self, forKey: .source)
        // Read as text so the envelope does not depend on the decoder's date strategy.
        let timeText = try c.decode(String.self, forKey: .time)
        guard let time = RFC3339Timestamp.date(from: timeText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .time, in: c, debugDescription: "'\(timeText)' is not an RFC 3339 date-time")
        }
        self.time = time
        subject = try c.decode(String.self, forKey: .subject)
        tenantID = try c.decode(TenantSlug.self, forKey: .tenantid)
        data = try c.decode(Payload.self, forKey: .data)
        // Tracing is best effort: a malformed or non-string value is dropped, never a reason to refuse the event.
        traceparent = Traceparent.validated((try? c.decodeIfPresent(String.self, forKey: .traceparent)) ?? nil)
        guard data.tenant == tenantID else {
            throw DecodingError.dataCorruptedError(
                forKey: .tenantid, in: c,
                debugDescription: "tenantid \"\(tenantID)\" differs from data.tenant \"\(data.tenant)\"")
        }
        guard data.eventSubject == subject else {
            throw DecodingError.dataCorruptedError(
                forKey: .subject, in: c,
                debugDescription: "subject \"\(subject)\" differs from the payload's \"\(data.eventSubject)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(CloudEvents.specVersion, forKey: .specversion)
        try c.encode(id, forKey: .id)
        try c.encode(source, forKey: .source)
        try c.encode(type.rawValue, forKey: .type)
        try c.encode(RFC3339Timestamp.string(from: time), forKey: .time)
        try c.encode(subject, forKey: .subject)
        try c.encode(CloudEvents.dataContentType, forKey: .datacontenttype)
        try c.encode(tenantID, forKey: .tenantid)
        try c.encode(data, forKey: .data)
        try c.encodeIfPresent(traceparent, forKey: .traceparent)
    }

    static func isJSONMediaType(_ value: String) -> Bool {
        let essence = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? value
        let trimmed = essence.trimmingCharacters(in: .whitespaces).lowercased()
        return trimmed == "application/json" || trimmed.hasSuffix("+json")
    }
}

extension CloudEvent: CompactJSONObject where Payload: CompactJSONObject {
    public func writeMembers(to object: inout CompactJSONObjectWriter) {
        object.member("data", object: data)
        object.member("datacontenttype", CloudEvents.dataContentType)
        object.member("id", id)
        object.member("source", source)
        object.member("specversion", CloudEvents.specVersion)
        object.member("subject", subject)
        object.member("tenantid", tenantID)
        object.member("time", RFC3339Timestamp.string(from: time))
        object.member("traceparent", traceparent)
        object.member("type", type.rawValue)
    }
}
