import Foundation
import Testing

@testable import LatchkeyCore

/// Every event type's samples must validate against its shipped schema, and the schemas must
/// refuse what events must never carry (a secret member, a wrong envelope).
@Suite struct EventSchemaTests {
    @Test func everyEventTypeHasASchemaResource() throws {
        for type in LatchkeyEventType.allCases {
            let url = try #require(EventSchemas.url(for: type), "missing \(type.schemaFileName)")
            let schema = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
            #expect(schema?["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
            let properties = schema?["properties"] as? [String: Any]
            let typeConst = (properties?["type"] as? [String: Any])?["const"] as? String
            #expect(typeConst == type.rawValue, "schema of \(type) pins another type")
        }
    }

    @Test func schemaDataForbidsUnlistedMembers() throws {
        for type in LatchkeyEventType.allCases {
            let schema = try JSONSerialization.jsonObject(with: EventSchemas.data(for: type)) as? [String: Any]
            let data = ((schema?["$defs"] as? [String: Any])?["data"]) as? [String: Any]
            #expect(data?["additionalProperties"] as? Bool == false, "\(type) data allows extra members")
        }
    }

    @Test(arguments: LatchkeyEventType.allCases)
    func samplesValidateAgainstTheirSchema(type: LatchkeyEventType) throws {
        let schema = try #require(EventSchemas.url(for: type))
        let samples = try SampleEvents.encoded(type)
        let results = try JSONSchemaValidator.validate(samples.map { .init(schema: schema, instance: $0.data) })
        for (sample, errors) in zip(samples, results) {
            #expect(errors.isEmpty, "\(sample.label) fails \(type.schemaFileName): \(errors)")
        }
    }

    @Test func schemasRejectLeakedSecretsAndBrokenEnvelopes() throws {
        let schema = try #require(EventSchemas.url(for: .clientRegistered))
        let valid = try SampleEvents.event(SampleEvents.fullClientRegistered).encoded()
        let base = try #require(JSONSerialization.jsonObject(with: valid) as? [String: Any])

        func mutated(_ change: (inout [String: Any]) -> Void) throws -> Data {
            var copy = base
            change(&copy)
            return try JSONSerialization.data(withJSONObject: copy, options: [.sortedKeys])
        }
        func withData(_ change: @escaping (inout [String: Any]) -> Void) throws -> Data {
            try mutated { event in
                var data = event["data"] as? [String: Any] ?? [:]
                change(&data)
                event["data"] = data
            }
        }

        let negatives: [(String, Data)] = [
            ("client_secret in data", try withData { $0["client_secret"] = "tfs9nad3dweFAa1CqpUj5p6NC4" }),
            ("registration_access_token in data", try withData { $0["registration_access_token"] = "e99ab41e" }),
            ("password in actor", try withData { $0["actor"] = ["type": "user", "id": "u", "password": "hunter2"] }),
            ("missing client_id", try withData { $0.removeValue(forKey: "client_id") }),
            ("unknown application_type", try withData { $0["application_type"] = "desktop" }),
            ("uppercase tenant", try withData { $0["tenant"] = "ACME" }),
            ("credential-named extension", try mutated { $0["token"] = "eyJhbGciOi" }),
            ("wrong specversion", try mutated { $0["specversion"] = "0.3" }),
            ("other event type", try mutated { $0["type"] = LatchkeyEventType.clientRevoked.rawValue }),
            ("time without fraction", try mutated { $0["time"] = "2025-03-14T15:09:26Z" }),
            ("time with offset", try mutated { $0["time"] = "2025-03-14T16:09:26.535897+01:00" }),
            ("id not a UUID", try mutated { $0["id"] = "event-1" }),
            ("missing tenantid", try mutated { $0.removeValue(forKey: "tenantid") }),
        ]
        let results = try JSONSchemaValidator.validate(
            [.init(schema: schema, instance: valid)] + negatives.map { .init(schema: schema, instance: $0.1) })
        #expect(results[0].isEmpty, "the unmodified sample must pass: \(results[0])")
        for ((label, _), errors) in zip(negatives, results.dropFirst()) {
            #expect(!errors.isEmpty, "schema accepted an event with \(label)")
        }
    }

    @Test func extensionAttributesLikeTraceparentAreAllowed() throws {
        let schema = try #require(EventSchemas.url(for: .tokenIssued))
        var event = try #require(
            JSONSerialization.jsonObject(with: SampleEvents.event(SampleEvents.fullTokenIssued).encoded())
                as? [String: Any])
        event["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let instance = try JSONSerialization.data(withJSONObject: event)
        let results = try JSONSchemaValidator.validate([.init(schema: schema, instance: instance)])
        #expect(results[0].isEmpty, "\(results[0])")
    }
}
