import Foundation

/// U+0000 in JSON: PostgreSQL `jsonb` and `text` cannot store it, so bodies carrying it are refused as
/// client errors before they reach the database (instead of failing there as a 500).
public enum JSONNULCheck {
    /// True when raw JSON text contains a NUL byte or a `\u0000` escape. Backslashes only occur inside
    /// strings, so an escape is recognised wherever it stands; `\\u0000` (an escaped backslash) is not one.
    public static func containsNUL(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            if byte == 0 { return true }
            guard byte == UInt8(ascii: "\\") else { continue }
            guard iterator.next() == UInt8(ascii: "u") else { continue }
            var digits: [UInt8] = []
            while digits.count < 4, let digit = iterator.next() { digits.append(digit) }
            if digits == Array("0000".utf8) { return true }
            if digits.contains(0) { return true }
        }
        return false
    }

    /// True when any string or member name of an already parsed value contains U+0000.
    public static func containsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): return text.utf8.contains(0)
        case .array(let elements): return elements.contains(where: containsNUL)
        case .object(let members): return members.contains { $0.key.utf8.contains(0) || containsNUL($0.value) }
        case .null, .bool, .number: return false
        }
    }
}
