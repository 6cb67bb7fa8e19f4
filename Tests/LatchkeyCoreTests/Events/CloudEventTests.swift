import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct CloudEventTests {
    @Test func envelopeCarriesEveryRequiredAttribute() throws {
        let event = SampleEvents.event(SampleEvents.fullClientRevoked)
        let json = try LatchkeyJSON.decode(JSONValue.self, from: event.encoded())
        #expect(json["specversion"] == "1.0")
        #expect(json["id"] == "3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e")
        #expect(json["source"] == "/latchkey/registration-gateway")
        #expect(json["type"] == "io.latchkey.client.revoked.v1")
        #expect(json["time"] == "2025-03-14T15:09:26.535897Z")
        #expect(json["subject"]?.stringValue == SampleEvents.clientID)
        #expect(json["datacontenttype"] == "application/json")
        #expect(json["tenantid"] == "acme")
        #expect(json["data"]?["reason"] == "admin")
        #expect(json["data"]?["revoked_at"] == "2025-03-14T15:09:26.535897Z")
        #expect(CloudEvents.contentType == "application/cloudevents+json")
    }

    @Test func encodingIsDeterministicWithSortedKeys() throws {
        let event = SampleEvents.event(SampleEvents.minimalClientRevoked)
        let first = try event.encoded()
        #expect(try event.encoded() == first)
        // The wire format, byte for byte: keys sorted at every level, slashes unescaped.
        let expected =
            #"{"data":{"actor":{"id":"inactive-client-expiry","type":"system"},"client_id":"\#(SampleEvents.clientID)","#
            + #""reason":"expired","revoked_at":"2025-03-14T15:09:26.535897Z","tenant":"acme"},"#
            + #""datacontenttype":"application/json","id":"3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e","#
            + #""source":"/latchkey/registration-gateway","specversion":"1.0","#
            + #""subject":"\#(SampleEvents.clientID)","tenantid":"acme","#
            + #""time":"2025-03-14T15:09:26.535897Z","type":"io.latchkey.client.revoked.v1"}"#
        #expect(String(decoding: first, as: UTF8.self) == expected)
    }

    @Test func roundTripsEveryPayloadType() throws {
        try roundTrip(SampleEvents.fullClientRegistered)
        try roundTrip(SampleEvents.minimalClientRegistered)
        try roundTrip(SampleEvents.fullTokenIssued)
        try roundTrip(SampleEvents.minimalTokenIssued)
        try roundTrip(SampleEvents.fullClientRevoked)
        try roundTrip(SampleEvents.fullClientUpdated)
        try roundTrip(SampleEvents.fullUserRegistered)
        try roundTrip(SampleEvents.fullTokenRevoked)
        try roundTrip(SampleEvents.fullReuseDetected)
    }

    @Test func eventsMadeWithTheCurrentTimeRoundTripToEqualValues() throws {
        // Dates are kept at microsecond precision from the start, as they will be on the wire.
        let now = Date()
        let payload = TokenIssued(
            tenant: SampleEvents.tenant, clientID: "c1", grantType: .refreshToken, scope: "openid", jti: "j",
            tokenTypes: [.access, .refresh], expiresAt: now.addingTimeInterval(600),
            refreshExpiresAt: now.addingTimeInterval(86_400), actor: .client("c1"))
        let event = CloudEvent(source: EventSource.tokenService, time: now, data: payload)
        #expect(try CloudEvent<TokenIssued>.decode(from: event.encoded()) == event)
        let revoked = CloudEvent(
            source: EventSource.registrationGateway, time: now,
            data: ClientRevoked(
                tenant: SampleEvents.tenant, clientID: "c1", reason: .deregistered,
                actor: .client("c1"), revokedAt: now))
        #expect(try CloudEvent<ClientRevoked>.decode(from: revoked.encoded()) == revoked)
    }

    private func roundTrip<P: EventPayload & Hashable>(_ payload: P) throws {
        let event = CloudEvent(source: EventSource.tokenService, data: payload)
        let decoded = try CloudEvent<P>.decode(from: event.encoded())
        #expect(decoded == event)
    }

    @Test func defaultsGiveALowercaseUUIDAndMicrosecondTime() throws {
        let event = CloudEvent(source: EventSource.tokenService, data: SampleEvents.minimalTokenIssued)
        #expect(event.uuid != nil)
        #expect(
            CloudEvent(
                id: UUID(uuidString: "A0000000-0000-4000-8000-000000000001")!, source: "/x",
                data: SampleEvents.minimalTokenIssued
            ).id == "a0000000-0000-4000-8000-000000000001")
        #expect(event.id == event.id.lowercased())
        #expect(event.time == RFC3339Timestamp.normalized(event.time))
        #expect(event.subject == SampleEvents.clientID)
        #expect(event.tenantID == SampleEvents.tenant)
        #expect(event.kafkaKey == "acme/\(SampleEvents.clientID)")
        #expect(event.topic() == "latchkey.token-issued")
        #expect(event.topic(prefix: "staging.") == "staging.token-issued")
    }

    @Test func userEventsUseTheUserAsSubject() {
        let event = SampleEvents.event(SampleEvents.fullUserRegistered)
        #expect(event.subject == SampleEvents.userID.uuidString)
        #expect(event.kafkaKey == "acme/\(SampleEvents.userID.uuidString)")
    }

    @Test func decodingToleratesExtraAttributesAndOffsets() throws {
        let json = """
            {"specversion":"1.0","id":"e1","source":"/latchkey/gateway","type":"io.latchkey.client.revoked.v1",
             "time":"2025-03-14T16:09:26.5+01:00","subject":"c1","tenantid":"acme",
             "traceparent":"00-abc-def-01","partitionkey":"x",
             "data":{"tenant":"acme","client_id":"c1","reason":"deregistered","future_member":1,
                     "actor":{"type":"user","id":"u1"},"revoked_at":"2025-03-14T15:09:26Z"}}
            """
        let event = try CloudEvent<ClientRevoked>.decode(from: Data(json.utf8))
        #expect(event.data.reason == .deregistered)
        #expect(RFC3339Timestamp.string(from: event.time) == "2025-03-14T15:09:26.500000Z")
    }

    @Test(arguments: [
        ("specversion", #""0.3""#, "specversion"),
        ("type", #""io.latchkey.token.issued.v1""#, "expected type"),
        ("tenantid", #""globex""#, "differs from data.tenant"),
        ("subject", #""someone-else""#, "differs from the payload"),
        ("time", #""yesterday""#, "RFC 3339"),
        ("datacontenttype", #""text/plain""#, "not JSON"),
    ])
    func decodingRefusesInconsistentEnvelopes(attribute: String, value: String, message: String) throws {
        var object = try #require(
            LatchkeyJSON.decode(JSONValue.self, from: SampleEvents.event(SampleEvents.fullClientRevoked).encoded())
                .objectValue)
        object[attribute] = try LatchkeyJSON.decode(JSONValue.self, from: Data(value.utf8))
        let data = try LatchkeyJSON.encode(JSONValue.object(object))
        let error = try #require(throws: DecodingError.self) { try CloudEvent<ClientRevoked>.decode(from: data) }
        #expect(error.readableDescription.contains(message), "\(error.readableDescription)")
    }

    @Test func anyCloudEventReadsEveryTypeAndKeepsExtensions() throws {
        for type in LatchkeyEventType.allCases {
            for sample in try SampleEvents.encoded(type) {
                let any = try AnyCloudEvent.decode(from: sample.data)
                #expect(any.eventType == type)
                #expect(any.tenant == SampleEvents.tenant)
                #expect(any.timeDate == SampleEvents.time)
                #expect(any.extensions.isEmpty)
                #expect(try LatchkeyJSON.encode(any) == sample.data, "AnyCloudEvent must re-encode byte for byte")
            }
        }
        var object = try #require(
            LatchkeyJSON.decode(JSONValue.self, from: SampleEvents.event(SampleEvents.fullTokenIssued).encoded())
                .objectValue)
        object["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let any = try AnyCloudEvent.decode(from: LatchkeyJSON.encode(JSONValue.object(object)))
        #expect(any.extensions["traceparent"]?.stringValue?.hasPrefix("00-") == true)
        let typed = try any.decode(as: TokenIssued.self)
        #expect(typed.data == SampleEvents.fullTokenIssued)
        #expect(throws: DecodingError.self) { try any.decode(as: ClientRevoked.self) }
    }

    @Test func anyCloudEventNeedsOnlyTheRequiredAttributes() throws {
        let minimal = #"{"specversion":"1.0","id":"x","source":"/elsewhere","type":"com.example.other"}"#
        let any = try AnyCloudEvent.decode(from: Data(minimal.utf8))
        #expect(any.eventType == nil)
        #expect(any.data == nil)
        #expect(throws: DecodingError.self) { try AnyCloudEvent.decode(from: Data(#"{"id":"x"}"#.utf8)) }
    }

    @Test func clientRegisteredFromRecordFillsDefaults() {
        let record = ClientRecord(
            clientID: "c1", tenant: SampleEvents.tenant, clientType: .confidential, applicationType: .native,
            authenticatedUser: SampleEvents.userID, templateID: "acme-mobile",
            metadata: ClientMetadata(redirectURIs: ["com.acme.app:/cb"], scope: "openid", softwareID: "acme-mobile"),
            createdAt: SampleEvents.time, updatedAt: SampleEvents.time, registrationMechanism: .userToken)
        let payload = ClientRegistered(record: record, actor: .user(SampleEvents.userID))
        #expect(payload.tokenEndpointAuthMethod == .clientSecretBasic)
        #expect(payload.grantTypes == [.authorizationCode])
        #expect(payload.redirectURIs == ["com.acme.app:/cb"])
        #expect(payload.dpopBoundAccessTokens == false)
        #expect(payload.templateID == "acme-mobile")
        #expect(payload.authenticatedUser == SampleEvents.userID)
        #expect(payload.eventSubject == "c1")
    }

    @Test func clientUpdatedComputesChangedFields() {
        let old = ClientMetadata(redirectURIs: ["com.acme.app:/cb"], clientName: "A", scope: "openid")
        var new = old
        new.clientName = "B"
        new.contacts = ["ops@acme.example"]
        #expect(ClientUpdated.changedFields(from: old, to: new) == ["client_name", "contacts"])
        #expect(ClientUpdated.changedFields(from: old, to: old).isEmpty)
    }

    @Test func revocationReasonsMapToStatuses() {
        #expect(ClientRevoked.Reason.deregistered.resultingStatus == .deleted)
        #expect(ClientRevoked.Reason.expired.resultingStatus == .expired)
        #expect(ClientRevoked.Reason.admin.resultingStatus == .revoked)
        #expect(ClientRevoked.Reason.refreshTokenReuse.resultingStatus == .revoked)
    }
}
