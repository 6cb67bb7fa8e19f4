import Foundation

/// A type whose JSON object ``CompactJSONEncoder`` writes member by member, without going through
/// `Encodable`'s containers: the documents every grant writes (access-token claims, `TokenIssued`, the token
/// response), where the containers' dynamic dispatch cost more than the writing. `encode(to:)` stays the
/// definition of the bytes; both must write the same, which the tests compare.
public protocol CompactJSONObject: Encodable {
    /// Writes the members, keys in ascending order of their UTF-8 bytes and each key at most once (what
    /// `JSONEncoder`'s `.sortedKeys` writes); an absent optional writes no member, as `encodeIfPresent`.
    func writeMembers(to object: inout CompactJSONObjectWriter)
}

/// The members of one object being written by a ``CompactJSONObject``.
public struct CompactJSONObjectWriter {
    let writer: CompactJSONWriter
    private var first = true
    #if DEBUG
        private var previousKey: StaticString?
    #endif

    init(writer: CompactJSONWriter) {
        self.writer = writer
    }

    /// Writes `value` as a whole object.
    static func write(_ value: some CompactJSONObject, to writer: CompactJSONWriter) {
        writer.writeASCII(UInt8(ascii: "{"))
        var object = CompactJSONObjectWriter(writer: writer)
        value.writeMembers(to: &object)
        writer.writeASCII(UInt8(ascii: "}"))
    }

    private mutating func key(_ key: StaticString) {
        #if DEBUG
            if let previousKey {
                let order = CompactJSONWriter.compare(previousKey.description, key.description)
                precondition(order < 0, "members must be written in key order: \(previousKey) before \(key)")
            }
            previousKey = key
        #endif
        if !first { writer.writeASCII(UInt8(ascii: ",")) }
        first = false
        writer.writeASCII(UInt8(ascii: "\""))
        writer.writeLiteral(key)
        writer.writeLiteral("\":")
    }

    public mutating func member(_ key: StaticString, _ value: String) {
        self.key(key)
        writer.writeString(value)
    }

    public mutating func member(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        member(key, value)
    }

    public mutating func member(_ key: StaticString, _ value: some FixedWidthInteger) {
        self.key(key)
        writer.writeInteger(value)
    }

    public mutating func member<I: FixedWidthInteger>(_ key: StaticString, _ value: I?) {
        guard let value else { return }
        member(key, value)
    }

    public mutating func member(_ key: StaticString, _ value: some RawRepresentable<String>) {
        member(key, value.rawValue)
    }

    /// A date as the encoder's date strategy writes it.
    public mutating func member(_ key: StaticString, _ value: Date) {
        switch writer.dates {
        case .rfc3339: member(key, RFC3339Timestamp.string(from: value))
        case .deferredToDate:
            self.key(key)
            writer.writeFloatingPoint(value.timeIntervalSinceReferenceDate)
        }
    }

    public mutating func member(_ key: StaticString, _ value: Date?) {
        guard let value else { return }
        member(key, value)
    }

    /// A UUID as its `Encodable` conformance writes it: the upper-case string.
    public mutating func member(_ key: StaticString, _ value: UUID?) {
        guard let value else { return }
        member(key, value.uuidString)
    }

    public mutating func member(_ key: StaticString, _ values: [String]) {
        self.key(key)
        writer.writeASCII(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { writer.writeASCII(UInt8(ascii: ",")) }
            writer.writeString(value)
        }
        writer.writeASCII(UInt8(ascii: "]"))
    }

    public mutating func member(_ key: StaticString, _ values: [String]?) {
        guard let values else { return }
        member(key, values)
    }

    public mutating func member<R: RawRepresentable<String>>(_ key: StaticString, _ values: [R]) {
        member(key, values.map(\.rawValue))
    }

    public mutating func member(_ key: StaticString, object value: some CompactJSONObject) {
        self.key(key)
        Self.write(value, to: writer)
    }

    public mutating func member(_ key: StaticString, object value: (some CompactJSONObject)?) {
        guard let value else { return }
        member(key, object: value)
    }

    /// A member whose value writes itself through `Encodable`, as the rest of `CompactJSONEncoder` does; a
    /// value it leaves to `JSONEncoder` (or that throws) leaves the whole document to it.
    public mutating func member(_ key: StaticString, encoding value: (some Encodable)?) {
        guard let value else { return }
        self.key(key)
        // A direct writer uses no level: the first one is free for this value and what it contains.
        let level = writer.level(at: 0, key: nil)
        do { try level.encodeValue(value) } catch { writer.unsupported = true }
        if !level.wroteValue { writer.writeLiteral("{}") }
    }
}
