import Foundation

/// The `data` of a Latchkey CloudEvent. Payloads carry identifiers, never a secret, token, code
/// or password (events are read by every consumer and kept for audit); their schemas refuse any member they do not list.
public protocol EventPayload: Codable, Sendable {
    static var eventType: LatchkeyEventType { get }
    /// The tenant the event belongs to; becomes the `tenantid` extension attribute.
    var tenant: TenantSlug { get }
    /// The CloudEvents `subject` and second half of the Kafka key: the client id (the user id for
    /// `UserRegistered`, which may have no client).
    var eventSubject: String { get }
}
