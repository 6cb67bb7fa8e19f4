import Foundation
import Testing

@testable import LatchkeyCore

/// The distributed-tracing extension attribute `traceparent` of the envelope, and the W3C format it must have.
@Suite struct CloudEventTraceparentTests {
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func aTraceparentIsWrittenAndReadBack() throws {
        var event = SampleEvents.event(SampleEvents.fullClientRevoked)
        event.traceparent = Self.traceparent
        let json = try LatchkeyJSON.decode(JSONValue.self, from: event.encoded())
        #expect(json["traceparent"]?.stringValue == Self.traceparent)
        let decoded = try CloudEvent<ClientRevoked>.decode(from: event.encoded())
        #expect(decoded.traceparent == Self.traceparent)
        #expect(decoded == event)
        #expect(Traceparent.traceID(of: Self.traceparent) == "4bf92f3577b34da6a3ce929d0e0e4736")
        // Without one, the envelope is what it always was.
        let plain = try LatchkeyJSON.decode(
            JSONValue.self, from: SampleEvents.event(SampleEvents.fullClientRevoked).encoded())
        #expect(plain["traceparent"] == nil)
    }

    @Test(arguments: [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba9g2b7-01",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-abc-def-01",
        "",
    ])
    func malformedTraceparentsAreDroppedNotFatal(value: String) throws {
        #expect(!Traceparent.isValid(value))
        #expect(Traceparent.traceID(of: value) == nil)
        var event = SampleEvents.event(SampleEvents.fullClientRevoked)
        event.traceparent = value
        #expect(event.traceparent == nil)
        var object = try #require(LatchkeyJSON.decode(JSONValue.self, from: event.encoded()).objectValue)
        object["traceparent"] = .string(value)
        let decoded = try CloudEvent<ClientRevoked>.decode(from: LatchkeyJSON.encode(JSONValue.object(object)))
        #expect(decoded.traceparent == nil)
        #expect(decoded.data == SampleEvents.fullClientRevoked)
    }

    @Test func aNonStringTraceparentIsDroppedToo() throws {
        var object = try #require(
            LatchkeyJSON.decode(JSONValue.self, from: SampleEvents.event(SampleEvents.fullClientRevoked).encoded())
                .objectValue)
        object["traceparent"] = .number(7)
        let decoded = try CloudEvent<ClientRevoked>.decode(from: LatchkeyJSON.encode(JSONValue.object(object)))
        #expect(decoded.traceparent == nil)
    }

    @Test func everyEventSchemaAcceptsTheAttribute() throws {
        let validator = try EventSchemaValidator()
        for type in LatchkeyEventType.allCases {
            for sample in try SampleEvents.encoded(type) {
                var object = try #require(LatchkeyJSON.decode(JSONValue.self, from: sample.data).objectValue)
                object["traceparent"] = .string(Self.traceparent)
                #expect(validator.firstError(in: .object(object), as: type) == nil, "\(type) \(sample.label)")
            }
        }
    }
}
