import Foundation
import Testing

@testable import LatchkeyCore

/// No secret, token, code or password ever appears in an event.
@Suite struct EventSecretLeakTests {
    static let forbiddenKeys: Set<String> = [
        "client_secret", "registration_access_token", "access_token", "refresh_token", "code", "password",
        "id_token", "initial_access_token", "code_verifier", "token", "secret", "dpop_proof", "password_hash",
        "authorization",
    ]

    /// Every member name anywhere in a JSON document, nested objects and arrays included.
    static func allKeys(in value: JSONValue) -> Set<String> {
        switch value {
        case .object(let members):
            return members.reduce(into: Set(members.keys)) { $0.formUnion(allKeys(in: $1.value)) }
        case .array(let items):
            return items.reduce(into: []) { $0.formUnion(allKeys(in: $1)) }
        default:
            return []
        }
    }

    @Test(arguments: LatchkeyEventType.allCases)
    func encodedEventsCarryNoCredentialMembers(type: LatchkeyEventType) throws {
        for sample in try SampleEvents.encoded(type) {
            let keys = Self.allKeys(in: try LatchkeyJSON.decode(JSONValue.self, from: sample.data))
            #expect(
                keys.isDisjoint(with: Self.forbiddenKeys),
                "\(sample.label) has \(keys.intersection(Self.forbiddenKeys))")
            #expect(!keys.contains { $0.contains("password") }, "\(sample.label) has a password-like member")
        }
    }

    @Test(arguments: LatchkeyEventType.allCases)
    func schemasDoNotListCredentialMembers(type: LatchkeyEventType) throws {
        let schema = try LatchkeyJSON.decode(JSONValue.self, from: EventSchemas.data(for: type))
        let dataProperties = schema["$defs"]?["data"]?["properties"]?.objectValue ?? [:]
        let actorProperties = schema["$defs"]?["actor"]?["properties"]?.objectValue ?? [:]
        let listed = Set(dataProperties.keys).union(actorProperties.keys)
        #expect(!listed.isEmpty)
        #expect(
            listed.isDisjoint(with: Self.forbiddenKeys),
            "\(type) schema lists \(listed.intersection(Self.forbiddenKeys))")
    }

    @Test func helperFindsNestedKeys() {
        let value: JSONValue = ["a": ["b": [["client_secret": "x"]]]]
        #expect(Self.allKeys(in: value) == ["a", "b", "client_secret"])
    }
}
