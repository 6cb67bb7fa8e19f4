import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct RFC3339TimestampTests {
    @Test func formatsUTCWithMicroseconds() {
        #expect(RFC3339Timestamp.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
        #expect(
            RFC3339Timestamp.string(from: Date(timeIntervalSince1970: 1_709_251_199.5)) == "2024-02-29T23:59:59.500000Z"
        )
        #expect(RFC3339Timestamp.string(from: Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750000Z")
        #expect(
            RFC3339Timestamp.string(from: Date(timeIntervalSince1970: 4_102_444_800)) == "2100-01-01T00:00:00.000000Z")
    }

    @Test(arguments: [
        ("2025-03-14T15:09:26.535897Z", "2025-03-14T15:09:26.535897Z"),
        ("2025-03-14T15:09:26Z", "2025-03-14T15:09:26.000000Z"),
        ("2025-03-14t15:09:26.5z", "2025-03-14T15:09:26.500000Z"),
        ("2025-03-14T16:39:26.123456789+01:30", "2025-03-14T15:09:26.123456Z"),
        ("2025-01-01T00:30:00-01:00", "2025-01-01T01:30:00.000000Z"),
        ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000000Z"),
    ])
    func parsesRFC3339(input: String, normalized: String) throws {
        let date = try #require(RFC3339Timestamp.date(from: input))
        #expect(RFC3339Timestamp.string(from: date) == normalized)
    }

    @Test(arguments: [
        "", "2025-03-14", "2025-03-14T15:09:26", "2025-03-14 15:09:26Z", "2025-13-01T00:00:00Z",
        "2025-02-29T00:00:00Z", "2025-03-14T24:00:00Z", "2025-03-14T15:09:26.Z", "2025-03-14T15:09:26+0100",
        "2025-03-14T15:09:26Zjunk", "yesterday",
    ])
    func refusesMalformedTimestamps(input: String) {
        #expect(RFC3339Timestamp.date(from: input) == nil)
    }

    @Test func normalizedDatesRoundTripExactly() throws {
        for seconds in [0.0, 1_700_000_000.123456, 1_741_964_966.535897, 2_000_000_000.999999, 1e9 + 1e-6] {
            let date = RFC3339Timestamp.normalized(Date(timeIntervalSince1970: seconds))
            let parsed = try #require(RFC3339Timestamp.date(from: RFC3339Timestamp.string(from: date)))
            #expect(parsed == date)
            #expect(RFC3339Timestamp.normalized(parsed) == parsed)
        }
    }

    @Test func latchkeyJSONUsesTheFormatForEveryDate() throws {
        let date = try #require(RFC3339Timestamp.date(from: "2025-03-14T15:09:26.535897Z"))
        let data = try LatchkeyJSON.encode(["at": date])
        #expect(String(decoding: data, as: UTF8.self) == #"{"at":"2025-03-14T15:09:26.535897Z"}"#)
        #expect(try LatchkeyJSON.decode([String: Date].self, from: data)["at"] == date)
        let error = try #require(throws: DecodingError.self) {
            try LatchkeyJSON.decode([String: Date].self, from: Data(#"{"at":12}"#.utf8))
        }
        #expect(error.readableDescription.hasPrefix("at: "))
    }

    /// Every field at its width, against the calendar's own components, for dates across four centuries.
    @Test func everyFieldIsWrittenAtItsWidth() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var generator = SeededGenerator(seed: 0x3339)
        for _ in 0..<2_000 {
            let micros = Int64.random(in: -2_208_988_800_000_000...7_258_118_400_000_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
            let normalized = Date(timeIntervalSince1970: Double(RFC3339Timestamp.microseconds(of: date)) / 1_000_000)
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: normalized)
            let fraction = ((RFC3339Timestamp.microseconds(of: date) % 1_000_000) + 1_000_000) % 1_000_000
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", parts.year!, parts.month!, parts.day!, parts.hour!,
                parts.minute!, parts.second!, Int(fraction))
            #expect(RFC3339Timestamp.string(from: date) == expected)
        }
    }
}
