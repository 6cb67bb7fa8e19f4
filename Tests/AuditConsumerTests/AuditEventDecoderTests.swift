import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyTestSupport
import Testing

@testable import AuditConsumer

/// What the ingestion makes of single records, before any storage.
@Suite struct AuditEventDecoderTests {
    static let decoder = try! AuditEventDecoder(validator: EventSchemaValidator(), topicPrefix: "latchkey.")

    static func message(_ event: EncodedEvent, topic: String? = nil) -> KafkaConsumerMessage {
        KafkaConsumerMessage(
            topic: topic ?? event.topic, partition: 2, offset: 77, key: Array(event.key.utf8), value: event.value,
            headers: [], timestampMilliseconds: nil)
    }

    @Test func acceptsEveryEventTypeAsTheServicesEncodeIt() throws {
        let factory = AuditEventFactory(tenant: "acme")
        let user = AuditEventFactory.user(5)
        let events = try [
            factory.registered(client: "c", user: user), factory.issued(client: "c", user: user),
            factory.issued(client: "c", user: nil, grant: .clientCredentials), factory.updated(client: "c", user: user),
            factory.revoked(client: "c", user: user), factory.userRegistered(user: user),
            factory.tokenRevoked(client: "c", user: user), factory.reuseDetected(client: "c", user: nil),
            factory.userDisabled(user: user), factory.userEnabled(user: user), factory.passwordChanged(user: user),
        ]
        #expect(Set(events.map(\.type)) == Set(LatchkeyEventType.allCases))
        for event in events {
            let record = try Self.decoder.decode(Self.message(event)).get()
            #expect(record.tenantID == "acme")
            #expect(record.eventID == event.id.lowercased())
            #expect(record.eventType == event.type)
            #expect(event.key == "acme/\(record.subject)")
            #expect(record.message.offset == 77)
            #expect(record.canonicalEvent == CanonicalJSON.encode(try StrictJSONParser.parse(event.value)))
        }
        // The user an event concerns: user_id, else authenticated_user, else a user actor; never a client actor.
        let users = try events.map { try Self.decoder.decode(Self.message($0)).get().userID }
        #expect(
            users == [
                user.uuidString.lowercased(), user.uuidString.lowercased(), nil, user.uuidString.lowercased(),
                user.uuidString.lowercased(), user.uuidString.lowercased(), user.uuidString.lowercased(), nil,
                user.uuidString.lowercased(), user.uuidString.lowercased(), user.uuidString.lowercased(),
            ])
    }

    @Test func keepsTheEventTimeToTheMicrosecond() throws {
        var factory = AuditEventFactory(tenant: "acme")
        factory.time = try #require(RFC3339Timestamp.date(from: "2025-03-14T15:09:26.535897Z"))
        let record = try Self.decoder.decode(Self.message(try factory.issued(client: "c", user: nil))).get()
        #expect(record.eventTime == "2025-03-14T15:09:26.535897Z")
    }

    @Test func refusesEventsOnAnotherTypesTopicOrOutsideTheStorableRange() throws {
        let factory = AuditEventFactory(tenant: "acme")
        let event = try factory.registered(client: "c", user: AuditEventFactory.user(1))
        let misrouted = Self.decoder.decode(Self.message(event, topic: "latchkey.token-issued"))
        #expect(throws: RejectedRecord.self) { try misrouted.get() }
        #expect((try? misrouted.get()) == nil)
        if case .failure(let rejected) = misrouted { #expect(rejected.reason == .wrongTopic) }

        var ancient = factory
        ancient.time = try #require(RFC3339Timestamp.date(from: "1969-12-31T23:59:59.000000Z"))
        if case .failure(let rejected) = Self.decoder.decode(Self.message(try ancient.issued(client: "c", user: nil))) {
            #expect(rejected.reason == .inconsistent)
        } else {
            Issue.record("an event from before 1970 must be refused")
        }
        var otherPrefix = event
        otherPrefix.topic = "staging.client-registered"
        if case .failure(let rejected) = AuditEventDecoder(validator: Self.decoder.validator, topicPrefix: "prod.")
            .decode(Self.message(otherPrefix))
        {
            #expect(rejected.reason == .wrongTopic)
        } else {
            Issue.record("topics of another prefix are not ours")
        }
    }
}
