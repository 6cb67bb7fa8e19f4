import Foundation
import LatchkeyCore
import Testing

/// `CompactJSONEncoder` must write exactly the bytes `JSONEncoder` writes with sorted keys and unescaped
/// slashes (the audit chain hashes event payloads, token signatures cover the claims' bytes).
public enum JSONEncoderParity {
    public static func foundation(_ dates: CompactJSONEncoder.Dates) -> JSONEncoder {
        switch dates {
        case .rfc3339:
            return LatchkeyJSON.makeEncoder()
        case .deferredToDate:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return encoder
        }
    }

    /// The compact encoding of `value`, which must exist and equal Foundation's.
    public static func expectSame<T: Encodable>(
        _ value: T, dates: CompactJSONEncoder.Dates = .rfc3339, _ label: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let expected = try foundation(dates).encode(value)
        let compact = try CompactJSONEncoder.encode(value, dates: dates)
        #expect(compact != nil, "\(label): left to JSONEncoder", sourceLocation: sourceLocation)
        if let compact, compact != expected {
            Issue.record(
                "\(label)\ncompact:    \(String(decoding: compact, as: UTF8.self))\nfoundation: \(String(decoding: expected, as: UTF8.self))",
                sourceLocation: sourceLocation)
        }
    }
}
