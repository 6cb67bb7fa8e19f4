import Foundation

/// One outbox row as the relay publishes it: an encoded CloudEvent bound for a topic and key.
public struct OutboxMessage: Sendable, Equatable {
    public let sequence: Int64
    public let eventID: UUID
    public let eventType: String
    public let topic: String
    public let key: String
    public let payload: String
    public let attempts: Int
    /// The W3C `traceparent` of the operation that wrote the event, when it was traced.
    public let traceparent: String?

    public init(
        sequence: Int64, eventID: UUID, eventType: String, topic: String, key: String, payload: String, attempts: Int,
        traceparent: String? = nil
    ) {
        self.traceparent = traceparent
        self.sequence = sequence
        self.eventID = eventID
        self.eventType = eventType
        self.topic = topic
        self.key = key
        self.payload = payload
        self.attempts = attempts
    }
}

/// Publishes a batch in order and reports each message's delivery; Kafka in production.
public protocol OutboxPublisher: Sendable {
    /// One result per message, in the same order; returns only when every delivery is known.
    ///
    /// Hands the messages over in order and calls `whenHandedOver` exactly once, when all of them are
    /// (before their deliveries are awaited): the relay hands over its next batch only after that.
    func publish(
        _ messages: [OutboxMessage], whenHandedOver: @escaping @Sendable () -> Void
    ) async -> [Result<Void, any Error>]
}
