import Foundation

/// An object's container: each member is written as `"key":value` where it is encoded, and the object is
/// sorted when its value's encoding ends (`CompactJSONWriter.closeObject`).
struct CompactJSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let level: CompactJSONLevel

    var codingPath: [any CodingKey] { level.codingPath }

    private func member(_ key: Key, _ write: (CompactJSONWriter) throws -> Void) rethrows {
        let writer = level.writer
        let start = writer.bytes.count
        let name = key.stringValue
        if !writer.writeString(name) { level.keysASCII = false }
        writer.writeASCII(UInt8(ascii: ":"))
        try write(writer)
        level.members.append(CompactJSONMember(key: name, start: start, end: writer.bytes.count))
    }

    mutating func encodeNil(forKey key: Key) throws { member(key) { $0.writeLiteral("null") } }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        member(key) { value ? $0.writeLiteral("true") : $0.writeLiteral("false") }
    }
    mutating func encode(_ value: String, forKey key: Key) throws { member(key) { $0.writeString(value) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { member(key) { $0.writeFloatingPoint(value) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { member(key) { $0.writeFloatingPoint(value) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { member(key) { $0.writeInteger(value) } }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try member(key) { _ in try level.encodeChild(value, key: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        KeyedEncodingContainer(CompactJSONKeyedContainer<NestedKey>(level: level.discarding()))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        CompactJSONUnkeyedContainer(level: level.discarding())
    }

    mutating func superEncoder() -> any Encoder { level.discarding() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { level.discarding() }
}

/// An array's container: `[` is written when the container is requested, `]` when the value's encoding ends.
struct CompactJSONUnkeyedContainer: UnkeyedEncodingContainer {
    let level: CompactJSONLevel

    var codingPath: [any CodingKey] { level.codingPath }
    var count: Int { level.elementCount }

    private func element(_ write: (CompactJSONWriter) throws -> Void) rethrows {
        let writer = level.writer
        if level.elementCount > 0 { writer.writeASCII(UInt8(ascii: ",")) }
        try write(writer)
        level.elementCount += 1
    }

    mutating func encodeNil() throws { element { $0.writeLiteral("null") } }
    mutating func encode(_ value: Bool) throws {
        element { value ? $0.writeLiteral("true") : $0.writeLiteral("false") }
    }
    mutating func encode(_ value: String) throws { element { $0.writeString(value) } }
    mutating func encode(_ value: Double) throws { element { $0.writeFloatingPoint(value) } }
    mutating func encode(_ value: Float) throws { element { $0.writeFloatingPoint(value) } }
    mutating func encode(_ value: Int) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: Int8) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: Int16) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: Int32) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: Int64) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt8) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt16) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt32) throws { element { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt64) throws { element { $0.writeInteger(value) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = level.elementCount
        try element { _ in try level.encodeChild(value, key: CompactJSONIndexKey(index)) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        KeyedEncodingContainer(CompactJSONKeyedContainer<NestedKey>(level: level.discarding()))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        CompactJSONUnkeyedContainer(level: level.discarding())
    }

    mutating func superEncoder() -> any Encoder { level.discarding() }
}

/// The coding key of an array element (`codingPath` of values inside arrays).
struct CompactJSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
