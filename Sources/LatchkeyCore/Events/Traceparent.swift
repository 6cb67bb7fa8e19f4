/// W3C Trace Context `traceparent` values, as events carry them in the CloudEvents distributed-tracing
/// extension attribute and the outbox keeps them.
public enum Traceparent {
    /// Version `00` with a 32- and a 16-digit lower-case hex id (neither all zeros) and two hex digits of
    /// flags. Anything else, including upper case and later versions, is refused: tracing data from outside
    /// is only ever continued when it is exactly what the specification allows.
    public static func isValid(_ value: String) -> Bool {
        let parts = value.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].elementsEqual("00".utf8) else { return false }
        func isHex(_ part: Substring.UTF8View.SubSequence, length: Int) -> Bool {
            part.count == length && part.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        }
        return isHex(parts[1], length: 32) && isHex(parts[2], length: 16) && isHex(parts[3], length: 2)
            && parts[1].contains { $0 != UInt8(ascii: "0") } && parts[2].contains { $0 != UInt8(ascii: "0") }
    }

    /// The value when it is valid, else nil.
    public static func validated(_ value: String?) -> String? {
        guard let value, isValid(value) else { return nil }
        return value
    }

    /// The 32-digit trace id of a valid value.
    public static func traceID(of value: String) -> String? {
        guard isValid(value) else { return nil }
        return String(value.dropFirst(3).prefix(32))
    }
}
