import Foundation
import Testing

@testable import LatchkeyCore

/// The runtime validator (`JSONSchema`, used by the audit consumer on every record) must agree
/// with the reference validator (Python `jsonschema`) on the shipped schemas — on the samples and
/// on thousands of systematic mutations of them.
@Suite struct RuntimeSchemaValidatorTests {
    @Test func compilesEveryShippedSchema() throws {
        let validator = try EventSchemaValidator()
        for type in LatchkeyEventType.allCases {
            #expect(validator.schema(for: type) != nil)
        }
    }

    @Test func agreesWithTheReferenceValidatorOnSamplesAndMutations() throws {
        let validator = try EventSchemaValidator()
        var cases: [(type: LatchkeyEventType, instance: JSONValue)] = []
        for type in LatchkeyEventType.allCases {
            for sample in try SampleEvents.encoded(type) {
                let instance = try StrictJSONParser.parse([UInt8](sample.data))
                cases.append((type, instance))
                // Every 9th mutation: the reference validator re-checks its schema per case, which
                // makes the full set (about 5,000 per run) take half a minute; the stride still
                // reaches every member and every replacement value across the samples.
                let mutations = Self.mutations(of: instance)
                cases += stride(from: sample.label.count % 9, to: mutations.count, by: 9).map { (type, mutations[$0]) }
            }
        }
        let encoded = cases.map { Data(CanonicalJSON.encode($0.instance)) }
        let reference = try JSONSchemaValidator.validate(
            zip(cases, encoded).map { item, data in
                JSONSchemaValidator.Case(schema: EventSchemas.url(for: item.type)!, instance: data)
            })
        var disagreements: [String] = []
        for ((item, data), expected) in zip(zip(cases, encoded), reference) {
            let mine = validator.firstError(in: item.instance, as: item.type)
            if (mine == nil) != expected.isEmpty {
                disagreements.append(
                    "\(String(decoding: data, as: UTF8.self).prefix(300)) — runtime: \(mine?.description ?? "valid"), reference: \(expected)"
                )
            }
        }
        #expect(
            disagreements.isEmpty,
            "\(disagreements.count) of \(cases.count) disagree:\n\(disagreements.prefix(5).joined(separator: "\n"))")
        #expect(reference.filter(\.isEmpty).count >= 14, "the samples themselves are valid")
        #expect(reference.filter { !$0.isEmpty }.count > 350, "the mutations exercise the refusals")
    }

    @Test func namesThePathOfTheFirstViolation() throws {
        let validator = try EventSchemaValidator()
        var event = try #require(
            try StrictJSONParser.parse(
                [UInt8](SampleEvents.event(SampleEvents.fullClientRegistered).encoded())
            ).objectValue)
        var data = try #require(event["data"]?.objectValue)
        data["client_secret"] = "leaked"
        event["data"] = .object(data)
        let error = validator.firstError(in: .object(event), as: .clientRegistered)
        #expect(error?.description == "data.client_secret: member is not allowed")
        event["data"] = .object(data.merging(["client_secret": nil, "grant_types": ["magic"]]) { $1 })
        #expect(validator.firstError(in: .object(event), as: .clientRegistered)?.path == "data.client_secret")
    }

    @Test func refusesSchemasItCannotFullyEnforce() {
        for schema: JSONValue in [
            ["type": "object", "patternProperties": ["^x": true]],
            ["$ref": "https://example.com/remote.json"],
            ["$ref": "#/$defs/loop", "$defs": ["loop": ["$ref": "#/$defs/loop"]]],
            ["type": "strange"],
            ["minLength": -1],
        ] {
            #expect(throws: (any Error).self, "\(schema)") { try JSONSchema(document: schema) }
        }
    }

    /// Values that break one assertion or another when put in place of any member.
    static let replacements: [JSONValue] = [
        .null, 0, 1.5, -1, "", "x", true, [], [:], .string(String(repeating: "A", count: 1_001)),
        "2025-03-14T15:09:26Z", "NOT-A-UUID",
    ]

    /// Every member replaced by each replacement, removed, and an extra member added to every object.
    static func mutations(of value: JSONValue) -> [JSONValue] {
        switch value {
        case .object(let members):
            var results: [JSONValue] = []
            var extra = members
            extra["unexpected_member"] = "x"
            results.append(.object(extra))
            var upper = members
            upper["Traceparent"] = "00-abc"
            results.append(.object(upper))
            for (name, member) in members {
                var removed = members
                removed[name] = nil
                results.append(.object(removed))
                for replacement in replacements where replacement != member {
                    var changed = members
                    changed[name] = replacement
                    results.append(.object(changed))
                }
                for nested in mutations(of: member) where nested != member {
                    var changed = members
                    changed[name] = nested
                    results.append(.object(changed))
                }
            }
            return results
        case .array(let elements):
            var results: [JSONValue] = [.array(elements + elements)]
            for index in elements.indices {
                for replacement in replacements {
                    var changed = elements
                    changed[index] = replacement
                    results.append(.array(changed))
                }
            }
            return results
        default:
            return []
        }
    }
}
