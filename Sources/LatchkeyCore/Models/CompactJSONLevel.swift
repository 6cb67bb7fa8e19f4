import Foundation

/// The `Encoder` of one value of a `CompactJSONEncoder` document, and its single-value container.
final class CompactJSONLevel: Encoder, SingleValueEncodingContainer {
    enum Shape {
        case nothing
        case single
        case object
        case array
    }

    unowned let writer: CompactJSONWriter
    let depth: Int
    private(set) var key: (any CodingKey)?
    private(set) var shape = Shape.nothing
    /// Where this value's bytes start in the writer's buffer.
    private var start = 0
    // Used by one thread for one document, like the writer's buffer: no run-time exclusivity checks.
    @exclusivity(unchecked) var members: [CompactJSONMember] = []
    @exclusivity(unchecked) var keysASCII = true
    @exclusivity(unchecked) var elementCount = 0

    init(writer: CompactJSONWriter, depth: Int, key: (any CodingKey)?) {
        self.writer = writer
        self.depth = depth
        self.key = key
    }

    func reset(key: (any CodingKey)?) {
        self.key = key
        shape = .nothing
        members.removeAll(keepingCapacity: true)
        keysASCII = true
        elementCount = 0
    }

    var wroteValue: Bool { shape != .nothing }

    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var level: CompactJSONLevel? = self
        while let current = level {
            if let key = current.key { path.append(key) }
            level = writer.parent(of: current.depth)
        }
        return path.reversed()
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    // MARK: Encoding a value

    /// Writes `value` at the end of the buffer.
    func encodeValue<T: Encodable>(_ value: T) throws {
        start = writer.bytes.count
        if T.self == Date.self {
            let date = value as! Date
            switch writer.dates {
            case .rfc3339: try encode(RFC3339Timestamp.string(from: date))
            case .deferredToDate: try encode(date.timeIntervalSinceReferenceDate)
            }
            return
        }
        if T.self == Data.self {
            try encode((value as! Data).base64EncodedString())
            return
        }
        if T.self == URL.self {
            try encode((value as! URL).absoluteString)
            return
        }
        if T.self == Decimal.self {
            writer.unsupported = true
        }
        try value.encode(to: self)
        switch shape {
        case .nothing, .single: break
        case .object: writer.closeObject(from: start, members: members, keysASCII: keysASCII)
        case .array: writer.writeASCII(UInt8(ascii: "]"))
        }
    }

    /// Writes `value` as a child of this one (a member's or an element's value).
    func encodeChild<T: Encodable>(_ value: T, key: any CodingKey) throws {
        let child = writer.level(at: depth + 1, key: key)
        try child.encodeValue(value)
        // A value that writes nothing is an empty object, as in `JSONEncoder`.
        if !child.wroteValue { writer.writeLiteral("{}") }
    }

    // MARK: Containers

    private func become(_ wanted: Shape) -> Bool {
        if shape == wanted { return wanted != .single }
        guard shape == .nothing else {
            writer.unsupported = true
            return false
        }
        shape = wanted
        if wanted == .array { writer.writeASCII(UInt8(ascii: "[")) }
        return true
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        guard become(.object) else { return KeyedEncodingContainer(CompactJSONKeyedContainer(level: discarding())) }
        return KeyedEncodingContainer(CompactJSONKeyedContainer(level: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        guard become(.array) else { return CompactJSONUnkeyedContainer(level: discarding()) }
        return CompactJSONUnkeyedContainer(level: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    /// An encoder whose output goes nowhere, for a request this encoder does not serve (the writer is
    /// already marked unsupported, so the caller falls back to `JSONEncoder`).
    func discarding() -> CompactJSONLevel {
        writer.unsupported = true
        return writer.discard.level(at: 0, key: nil)
    }

    // MARK: Single value

    private func single() -> Bool {
        guard shape == .nothing else {
            writer.unsupported = true
            return false
        }
        shape = .single
        return true
    }

    func encodeNil() throws { if single() { writer.writeLiteral("null") } }
    func encode(_ value: Bool) throws {
        if single() { value ? writer.writeLiteral("true") : writer.writeLiteral("false") }
    }
    func encode(_ value: String) throws { if single() { writer.writeString(value) } }
    func encode(_ value: Double) throws { if single() { writer.writeFloatingPoint(value) } }
    func encode(_ value: Float) throws { if single() { writer.writeFloatingPoint(value) } }
    func encode(_ value: Int) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: Int8) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: Int16) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: Int32) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: Int64) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: UInt) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: UInt8) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: UInt16) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: UInt32) throws { if single() { writer.writeInteger(value) } }
    func encode(_ value: UInt64) throws { if single() { writer.writeInteger(value) } }

    func encode<T: Encodable>(_ value: T) throws {
        guard single() else { return }
        // The value is this level's own: encoded in place (not as a child), its special types honoured.
        shape = .nothing
        try encodeValue(value)
        if !wroteValue { writer.writeLiteral("{}") }
        shape = .single
    }
}
