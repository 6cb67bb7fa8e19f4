import Foundation
import Testing

/// Reads response bodies as JSON objects, the one way tests do it. A body that is not a JSON object fails
/// the test (naming its first bytes) and reads as empty, so no expectation on it passes by accident.
public enum TestJSON {
    public static func object(_ bytes: some Sequence<UInt8>, sourceLocation: SourceLocation = #_sourceLocation)
        -> [String: Any]
    {
        let data = Data(bytes)
        if let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] { return object }
        Issue.record(
            "not a JSON object: \(String(decoding: data.prefix(300), as: UTF8.self))", sourceLocation: sourceLocation)
        return [:]
    }
}
