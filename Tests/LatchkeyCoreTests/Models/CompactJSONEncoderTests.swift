import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore

/// `CompactJSONEncoder` must write exactly the bytes `JSONEncoder` writes with sorted keys and unescaped
/// slashes (the audit chain hashes event payloads), so every test compares the two byte for byte.
@Suite struct CompactJSONEncoderTests {
    @Test(arguments: LatchkeyEventType.allCases)
    func everyEventIsWrittenAsJSONEncoderWritesIt(type: LatchkeyEventType) throws {
        for sample in SampleEvents.samples(type) {
            try JSONEncoderParity.expectSame(sample.event, sample.label)
        }
    }

    @Test func modelsAreWrittenAsJSONEncoderWritesThem() throws {
        try JSONEncoderParity.expectSame(ClientMetadataTests.full, "full client metadata")
        try JSONEncoderParity.expectSame(ClientMetadata(redirectURIs: ["com.acme.app:/cb"]), "minimal client metadata")
        try JSONEncoderParity.expectSame(TenantPolicy(), "default tenant policy")
        try JSONEncoderParity.expectSame(JSONValue.object([:]), "empty object")
        try JSONEncoderParity.expectSame([JSONValue](), "empty array")
    }

    /// Types that write their own members (the documents of every grant) write what their `Encodable`
    /// conformance writes, with either date strategy, whatever their strings hold and whichever optionals
    /// are set.
    @Test func objectsThatWriteTheirOwnMembersWriteWhatTheirEncodableWrites() throws {
        let texts = [
            "", "plain", "\"quoted\" \\ back/slash", "tab\tnew\nline\u{01}", "é 漢字 😀", "https://a.example/x?y=1",
        ]
        for (index, text) in texts.enumerated() {
            var payload = SampleEvents.fullTokenIssued
            payload.scope = text
            payload.jti = text
            payload.clientID = text
            payload.jkt = index.isMultiple(of: 2) ? text : nil
            payload.refreshFamilyID = index.isMultiple(of: 2) ? nil : text
            payload.audience = [[], [text], [text, "b"], nil][index % 4]
            payload.userID = index.isMultiple(of: 3) ? nil : UUID()
            payload.refreshExpiresAt = index.isMultiple(of: 2) ? nil : Date(timeIntervalSince1970: 1.5e9 + 0.25)
            payload.actor = EventActor(type: .system, id: text)
            var event = SampleEvents.event(payload, source: text)
            event.traceparent =
                index.isMultiple(of: 2) ? "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" : nil
            for dates in [CompactJSONEncoder.Dates.rfc3339, .deferredToDate] {
                try JSONEncoderParity.expectSame(event, dates: dates, "TokenIssued event \(index), \(dates)")
                try JSONEncoderParity.expectSame(payload, dates: dates, "TokenIssued \(index), \(dates)")
            }
        }
    }

    /// A JWS header writes itself too; an embedded key (a DPoP proof's) goes through `Encodable`.
    @Test func jwsHeadersAreWrittenAsTheirEncodableWritesThem() throws {
        let keys = JWSAlgorithm.allCases.map { JOSETestKeys.key(for: $0).publicJWK(kid: "k/1") }
        for (index, jwk) in ([nil] + keys).enumerated() {
            let header = EncodedHeader(
                alg: "ES256", typ: index.isMultiple(of: 2) ? "dpop+jwt" : nil,
                kid: index.isMultiple(of: 3) ? nil : "kid \"\(index)\"", cty: index == 1 ? "JWT" : nil, jwk: jwk)
            for dates in [CompactJSONEncoder.Dates.rfc3339, .deferredToDate] {
                try JSONEncoderParity.expectSame(header, dates: dates, "header \(index)")
            }
        }
    }

    @Test func stringsAreEscapedAsJSONEncoderEscapesThem() throws {
        let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        for text in [
            controls, "\"quoted\" \\ back/slash", "\u{7F}\u{80}\u{2028}\u{2029}", "é e\u{301} 漢字 😀 🇸🇪",
            "", "https://acme.example/cb?a=1&b=</script>",
        ] {
            try JSONEncoderParity.expectSame(text, "string \(Array(text.utf8))")
            try JSONEncoderParity.expectSame([text: text], "member named \(Array(text.utf8))")
        }
    }

    @Test func membersAreSortedByTheirKeysUTF8Bytes() throws {
        let keys = ["z", "Z", "a", "aa", "a\u{0}", "", "_", "1", "10", "9", "B", "a\"", "a\\", "~"]
        try JSONEncoderParity.expectSame(Dictionary(uniqueKeysWithValues: keys.map { ($0, $0.count) }))
        try JSONEncoderParity.expectSame(["é": 1], "one non-ASCII key")
        // Non-ASCII keys among others are JSONEncoder's ("é" and "e\u{301}" are one key to it).
        let unicode = ["é": 1, "z": 2, "😀": 3]
        #expect(try CompactJSONEncoder.encode(unicode, dates: .rfc3339) == nil)
        #expect(try LatchkeyJSON.encode(unicode) == LatchkeyJSON.makeEncoder().encode(unicode))
        try JSONEncoderParity.expectSame([3: "three", 1: "one", 20: "twenty", -4: "minus four"], "integer keys")
    }

    @Test func numbersAreWrittenAsJSONEncoderWritesThem() throws {
        let doubles: [Double] = [
            0, -0.0, 1, -1, 0.1, 0.1 + 0.2, 1e-7, 1e21, 1e22, 123_456_789_012_345_680, 5e-324,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 2.5, 1.0 / 3, 9_007_199_254_740_993,
        ]
        try JSONEncoderParity.expectSame(doubles, "doubles")
        try JSONEncoderParity.expectSame(doubles.map(Float.init).filter(\.isFinite), "floats")
        try JSONEncoderParity.expectSame(doubles.map { JSONValue.number($0) }, "JSONValue numbers")
        try JSONEncoderParity.expectSame(Integers(), "integer extremes")
    }

    @Test func datesDataAndURLsAreWrittenAsJSONEncoderWritesThem() throws {
        let special = Special(
            date: Date(timeIntervalSince1970: 1_741_964_966.535897), data: Data([0, 1, 2, 250, 251, 255]),
            url: URL(string: "https://acme.example/a path?q=1#f")!, optionalDate: nil,
            dates: [Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: -1.5)])
        try JSONEncoderParity.expectSame(special, dates: .rfc3339, "RFC 3339 dates")
        try JSONEncoderParity.expectSame(special, dates: .deferredToDate, "dates deferred to Date")
        try JSONEncoderParity.expectSame(Date(timeIntervalSince1970: 12.25), dates: .rfc3339, "top-level date")
    }

    @Test func containerEdgeCasesAreWrittenAsJSONEncoderWritesThem() throws {
        try JSONEncoderParity.expectSame(Edges(), "edge cases")
        try JSONEncoderParity.expectSame(["a": [[Int]](), "b": [[], [1], [2, 3]]], "nested arrays")
        try JSONEncoderParity.expectSame([String: [String: Int]](), "empty dictionary")
    }

    @Test func whatOnlyJSONEncoderWritesIsLeftToIt() throws {
        #expect(try CompactJSONEncoder.encode(Nested(), dates: .rfc3339) == nil)
        #expect(try CompactJSONEncoder.encode(Super(), dates: .rfc3339) == nil)
        #expect(try CompactJSONEncoder.encode(Decimal(string: "1.25")!, dates: .rfc3339) == nil)
        #expect(try CompactJSONEncoder.encode(WritesNothing(), dates: .rfc3339) == nil)
        #expect(try CompactJSONEncoder.encode([Double.nan], dates: .rfc3339) == nil)
        // …and through LatchkeyJSON the result is JSONEncoder's.
        #expect(try LatchkeyJSON.encode(Nested()) == LatchkeyJSON.makeEncoder().encode(Nested()))
        #expect(try LatchkeyJSON.encode(Super()) == LatchkeyJSON.makeEncoder().encode(Super()))
        #expect(throws: EncodingError.self) { try LatchkeyJSON.encode([Double.infinity]) }
    }

    @Test func codingPathsNameTheMembersAndElementsOnTheWay() throws {
        let recorder = PathRecorder()
        _ = try CompactJSONEncoder.encode(["outer": [PathProbe(recorder: recorder)]], dates: .rfc3339)
        #expect(recorder.paths == ["outer/Index 0"])
    }

    /// Random documents: strings from an alphabet of the characters that need care, numbers of every
    /// magnitude, objects and arrays nested four deep.
    @Test func randomDocumentsAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = SeededGenerator(seed: 0x5EED_1A7C)
        for round in 0..<2_000 {
            let document = Self.randomValue(depth: 0, using: &generator)
            try JSONEncoderParity.expectSame(
                document, dates: round.isMultiple(of: 2) ? .rfc3339 : .deferredToDate, "round \(round)")
        }
    }

    static func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: depth >= 4 ? 0...3 : 0...5, using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            let magnitude = Double.random(in: -30...30, using: &generator)
            let value = pow(10, magnitude) * (Bool.random(using: &generator) ? 1 : -1)
            return .number(Bool.random(using: &generator) ? value.rounded() : value)
        case 3: return .string(randomString(from: alphabet, using: &generator))
        case 4:
            return .array(
                (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    randomValue(depth: depth + 1, using: &generator)
                })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                members[randomString(from: keyAlphabet, using: &generator)] = randomValue(
                    depth: depth + 1, using: &generator)
            }
            return .object(members)
        }
    }

    static let alphabet: [Character] = Array("aAzZ09_-/\\\"\u{0}\u{1F}\n\t\u{7F}é😀 .:€")
    /// Member names: ASCII (an object with a non-ASCII name among others is left to `JSONEncoder`).
    static let keyAlphabet: [Character] = Array("aAzZ09_-/\\\"\u{0}\u{1F}\n\t\u{7F} .:")

    static func randomString(from alphabet: [Character], using generator: inout SeededGenerator) -> String {
        String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
    }
}

struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private struct Integers: Encodable {
    var int = Int.min, int8 = Int8.min, int16 = Int16.min, int32 = Int32.min, int64 = Int64.max
    var uint = UInt.max, uint8 = UInt8.max, uint16 = UInt16.max, uint32 = UInt32.max, uint64 = UInt64.max
    var zero = 0, list: [Int] = [-1, 0, 1, 10, 99, 100]
}

private struct Special: Encodable {
    var date: Date
    var data: Data
    var url: URL
    var optionalDate: Date?
    var dates: [Date]
}

/// Container uses a type may make: a key written twice, explicit nulls, a keyed container asked for twice,
/// an unkeyed container with every kind of element, a member that writes nothing.
private struct Edges: Encodable {
    enum Keys: String, CodingKey { case b, a, twice, null, list, empty, nothing, single }

    func encode(to encoder: any Encoder) throws {
        var first = encoder.container(keyedBy: Keys.self)
        try first.encode("first", forKey: .twice)
        try first.encode(1, forKey: .b)
        try first.encodeNil(forKey: .null)
        try first.encodeIfPresent(Int?.none, forKey: .a)
        var again = encoder.container(keyedBy: Keys.self)
        try again.encode("second", forKey: .twice)
        try again.encode(Wrapped(value: "in a single value container"), forKey: .single)
        try again.encode(WritesNothing(), forKey: .nothing)
        try again.encode([String: Int](), forKey: .empty)
        try again.encode(List(), forKey: .list)
    }
}

private struct List: Encodable {
    func encode(to encoder: any Encoder) throws {
        var list = encoder.unkeyedContainer()
        try list.encodeNil()
        try list.encode(true)
        try list.encode("text")
        try list.encode(-2.5)
        try list.encode(UInt8(7))
        try list.encode(WritesNothing())
        try list.encode(["k": [1, 2]])
        var again = encoder.unkeyedContainer()
        try again.encode(again.count)
    }
}

private struct Wrapped: Encodable {
    var value: String
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(["wrapped": value])
    }
}

private struct WritesNothing: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

private struct Nested: Encodable {
    enum Keys: CodingKey { case inner }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var inner = container.nestedContainer(keyedBy: Keys.self, forKey: .inner)
        try inner.encode("x", forKey: .inner)
    }
}

private struct Super: Encodable {
    enum Keys: CodingKey { case own }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .own)
        try "base".encode(to: container.superEncoder())
    }
}

private final class PathRecorder: @unchecked Sendable {
    var paths: [String] = []
}

private struct PathProbe: Encodable {
    let recorder: PathRecorder
    func encode(to encoder: any Encoder) throws {
        recorder.paths.append(encoder.codingPath.map(\.stringValue).joined(separator: "/"))
        var container = encoder.singleValueContainer()
        try container.encode(1)
    }
}
