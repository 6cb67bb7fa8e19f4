import Foundation
import LatchkeyCore
import LatchkeyKafka

/// Why a record went to the dead-letter topic; the `reason` label of the DLQ metric.
enum DeadLetterReason: String, Sendable, CaseIterable {
    case oversized
    case malformed
    case unknownType = "unknown_type"
    case wrongTopic = "wrong_topic"
    case schema
    case inconsistent
    case unstorable
    case idConflict = "id_conflict"
}

/// A record refused by the audit consumer, with what the dead-letter topic needs.
struct RejectedRecord: Error, Sendable {
    var message: KafkaConsumerMessage
    var reason: DeadLetterReason
    var detail: String
}

/// A valid event, ready to be chained and stored.
struct AuditRecord: Sendable {
    var message: KafkaConsumerMessage
    var tenantID: String
    /// Lower-case UUID text.
    var eventID: String
    var eventType: LatchkeyEventType
    var subject: String
    var userID: String?
    /// The event's `time`, as `RFC3339Timestamp` writes it (microseconds, `Z`).
    var eventTime: String
    var eventDate: Date
    /// RFC 8785 bytes of the whole CloudEvent: stored as `jsonb` and hashed.
    var canonicalEvent: [UInt8]
    /// The trace the record continues: its `traceparent` header (the producer's span), else the event's
    /// distributed-tracing attribute; nil when neither holds a valid one.
    var traceparent: String? = nil
}

/// Turns Kafka records into ``AuditRecord``s or ``RejectedRecord``s.
///
/// A record is accepted only when it is a JSON object within the size bound, its `type` is a
/// Latchkey event type published on that type's topic, it passes the type's JSON Schema, its
/// `tenantid` and `subject` agree with the payload, its time is in a storable range, and no
/// string holds U+0000 (which `jsonb` cannot store).
struct AuditEventDecoder: Sendable {
    static let maximumEventSize = 256 * 1024
    /// Earliest and latest event times PostgreSQL and the chain format can represent exactly.
    static let earliestTime = Date(timeIntervalSince1970: 0)
    static let latestTime = RFC3339Timestamp.date(from: "9999-12-31T23:59:59.999999Z") ?? .distantFuture

    let validator: EventSchemaValidator
    let topicPrefix: String

    func decode(_ message: KafkaConsumerMessage) -> Result<AuditRecord, RejectedRecord> {
        func reject(_ reason: DeadLetterReason, _ detail: String) -> Result<AuditRecord, RejectedRecord> {
            .failure(RejectedRecord(message: message, reason: reason, detail: detail))
        }
        guard message.value.count <= Self.maximumEventSize else {
            return reject(.oversized, "event of \(message.value.count) bytes exceeds \(Self.maximumEventSize)")
        }
        let event: JSONValue
        do {
            event = try StrictJSONParser.parse(message.value)
        } catch {
            return reject(.malformed, "not a JSON document: \(error.description)")
        }
        guard case .object(let attributes) = event else { return reject(.malformed, "the event is not a JSON object") }
        guard let typeName = attributes["type"]?.stringValue else {
            return reject(.malformed, "the event has no string type attribute")
        }
        guard let type = LatchkeyEventType(rawValue: typeName) else {
            return reject(.unknownType, "unknown event type \"\(typeName.prefix(200))\"")
        }
        guard type.topic(prefix: topicPrefix) == message.topic else {
            return reject(
                .wrongTopic,
                "\(type.rawValue) events belong on \(type.topic(prefix: topicPrefix)), not \(message.topic)")
        }
        if let error = validator.firstError(in: event, as: type) {
            return reject(.schema, "fails \(type.schemaFileName): \(error.description)")
        }
        // The schema guarantees these members and their shapes.
        let data = attributes["data"]?.objectValue ?? [:]
        let tenant = attributes["tenantid"]?.stringValue ?? ""
        let subject = attributes["subject"]?.stringValue ?? ""
        guard data["tenant"]?.stringValue == tenant else {
            return reject(.inconsistent, "tenantid \"\(tenant)\" differs from data.tenant")
        }
        let subjectMember = Self.subjectMember(of: type)
        guard data[subjectMember]?.stringValue == subject else {
            return reject(.inconsistent, "subject \"\(subject.prefix(255))\" differs from data.\(subjectMember)")
        }
        guard let timeText = attributes["time"]?.stringValue, let time = RFC3339Timestamp.date(from: timeText),
            time >= Self.earliestTime, time <= Self.latestTime
        else {
            return reject(.inconsistent, "time is outside 1970-01-01 … 9999-12-31")
        }
        guard !JSONNULCheck.containsNUL(event) else {
            return reject(.unstorable, "a string contains U+0000, which PostgreSQL jsonb cannot store")
        }
        let id = attributes["id"]?.stringValue ?? ""
        return .success(
            AuditRecord(
                message: message, tenantID: tenant, eventID: id.lowercased(), eventType: type, subject: subject,
                userID: Self.userID(in: data), eventTime: RFC3339Timestamp.string(from: time), eventDate: time,
                canonicalEvent: CanonicalJSON.encode(event),
                traceparent: Traceparent.validated(KafkaTraceContext.traceparentHeader(of: message))
                    ?? Traceparent.validated(attributes["traceparent"]?.stringValue)))
    }

    /// The payload member the CloudEvents `subject` repeats (`EventPayload.eventSubject`).
    static func subjectMember(of type: LatchkeyEventType) -> String {
        type.isUserEvent ? "user_id" : "client_id"
    }

    /// The end user an event concerns: `user_id`, else the client's `authenticated_user`, else a user actor.
    static func userID(in data: [String: JSONValue]) -> String? {
        if let user = data["user_id"]?.stringValue { return user.lowercased() }
        if let user = data["authenticated_user"]?.stringValue { return user.lowercased() }
        if let actor = data["actor"], actor["type"]?.stringValue == "user", let id = actor["id"]?.stringValue {
            return id.lowercased()
        }
        return nil
    }
}
