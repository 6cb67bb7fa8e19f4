import Foundation

/// Writes the same bytes as Foundation's `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]`, in
/// one pass into a byte buffer instead of through an intermediate tree of dictionaries.
///
/// Events are hashed by the audit chain and compared across services, so the output must not differ from
/// `JSONEncoder`'s by a single byte: members sorted by the UTF-8 bytes of their keys (a key written twice
/// keeps its last value), `"` `\` and control characters escaped exactly as `JSONEncoder` escapes them,
/// integers in decimal, floating-point numbers as their `description` without a trailing `.0`, `Data` as
/// base64, `URL` as its absolute string. What it does not write the same way — nested and super encoders,
/// `Decimal`, non-finite numbers, a top-level value that writes nothing, mixing container kinds — it does
/// not write at all: `encode` returns nil and the caller uses `JSONEncoder`. A ``CompactJSONObject`` writes
/// its members itself.
public enum CompactJSONEncoder {
    public enum Dates: Sendable {
        /// RFC 3339 strings, as `LatchkeyJSON`'s date strategy writes them.
        case rfc3339
        /// `Date`'s own encoding (seconds since 2001 as a number), `JSONEncoder`'s default.
        case deferredToDate
    }

    /// The JSON of `value`, or nil when `value` needs something only `JSONEncoder` writes.
    public static func encode<T: Encodable>(_ value: T, dates: Dates) throws -> Data? {
        let writer = CompactJSONWriter(dates: dates)
        if let object = value as? any CompactJSONObject {
            CompactJSONObjectWriter.write(object, to: writer)
            return writer.unsupported ? nil : Data(writer.bytes)
        }
        let root = writer.level(at: 0, key: nil)
        try root.encodeValue(value)
        guard !writer.unsupported, root.wroteValue else { return nil }
        return Data(writer.bytes)
    }
}

/// The output buffer and the per-depth encoders of one `encode` call.
final class CompactJSONWriter {
    // One document is written by one thread from start to end; the run-time exclusivity checks of every
    // append were a tenth of the encoding time.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Set when the value used something this encoder does not write like `JSONEncoder`.
    var unsupported = false
    let dates: CompactJSONEncoder.Dates
    private var levels: [CompactJSONLevel] = []
    private var scratch: [UInt8] = []
    /// Where containers this encoder does not serve write (levels do not keep their writer alive).
    private(set) lazy var discard = CompactJSONWriter(dates: dates)

    init(dates: CompactJSONEncoder.Dates) {
        self.dates = dates
        bytes.reserveCapacity(1_024)
    }

    /// The encoder of one value at `depth`. A value's encoding ends before its next sibling's starts, so one
    /// encoder per depth is reused for every value at that depth.
    func level(at depth: Int, key: (any CodingKey)?) -> CompactJSONLevel {
        if depth < levels.count {
            let level = levels[depth]
            level.reset(key: key)
            return level
        }
        let level = CompactJSONLevel(writer: self, depth: depth, key: key)
        levels.append(level)
        return level
    }

    func parent(of depth: Int) -> CompactJSONLevel? { depth > 0 ? levels[depth - 1] : nil }

    // MARK: Scalars

    func writeASCII(_ byte: UInt8) { bytes.append(byte) }

    func writeLiteral(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// A JSON string: `"`, `\` and the control characters escaped as `JSONEncoder` escapes them (`\b`,
    /// `\f`, `\n`, `\r`, `\t`, otherwise `\u00xx` in lower-case hex); `/` and everything else as is.
    /// Returns whether the string is ASCII.
    @discardableResult
    func writeString(_ string: String) -> Bool {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        let ascii = string.withUTF8 { utf8 in
            var mark = 0
            var seen: UInt8 = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                seen |= byte
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if index > mark { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<index])) }
                mark = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(Self.hexDigit(byte >> 4))
                    bytes.append(Self.hexDigit(byte & 0x0F))
                }
            }
            if utf8.count > mark { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...])) }
            return seen < 0x80
        }
        bytes.append(UInt8(ascii: "\""))
        return ascii
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// An integer in decimal, as its `description` spells it.
    func writeInteger<I: FixedWidthInteger>(_ value: I) {
        if I.bitWidth > 64 {
            bytes.append(contentsOf: value.description.utf8)
            return
        }
        var magnitude = UInt64(truncatingIfNeeded: value.magnitude)
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[(20 - count)...]))
        }
    }

    /// A finite floating-point number as `JSONEncoder` writes it (`description`, a trailing `.0` dropped);
    /// a non-finite one is left to `JSONEncoder`, which refuses it with its own error.
    func writeFloatingPoint<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) {
        guard value.isFinite else {
            unsupported = true
            writeLiteral("null")
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    // MARK: Objects

    /// Rewrites the members written since `start` (each `"key":value`, in the order encoded) as one object
    /// with the members sorted by key; of members with the same key only the last is kept.
    ///
    /// `JSONEncoder` keeps members in a dictionary, where two keys are the same when they are canonically
    /// equivalent (`"é"` and `"e\u{301}"`), and writes the first one's spelling with the last one's value.
    /// Only ASCII keys are handled here, where the same means the same bytes; an object with a non-ASCII key
    /// among others is left to `JSONEncoder`.
    func closeObject(from start: Int, members: [CompactJSONMember], keysASCII: Bool) {
        if members.isEmpty {
            writeLiteral("{}")
            return
        }
        if !keysASCII, members.count > 1 {
            unsupported = true
            return
        }
        let order = sortedOrder(members)
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: bytes[start...])
        bytes.removeSubrange(start...)
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for (position, index) in order.enumerated() {
            // Of equal keys (adjacent, in encoding order) the last one is written.
            if position + 1 < order.count, Self.compare(members[order[position + 1]].key, members[index].key) == 0 {
                continue
            }
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            let member = members[index]
            bytes.append(contentsOf: scratch[(member.start - start)..<(member.end - start)])
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// The members' indices sorted by key, equal keys in encoding order.
    private func sortedOrder(_ members: [CompactJSONMember]) -> [Int] {
        var order = Array(members.indices)
        func precedes(_ a: Int, _ b: Int) -> Bool {
            let comparison = Self.compare(members[a].key, members[b].key)
            return comparison == 0 ? a < b : comparison < 0
        }
        if members.count > 32 {
            order.sort(by: precedes)
            return order
        }
        // Objects are small: an insertion sort moves integers and compares each pair at most once.
        for index in 1..<order.count {
            let current = order[index]
            var slot = index
            while slot > 0, precedes(current, order[slot - 1]) {
                order[slot] = order[slot - 1]
                slot -= 1
            }
            order[slot] = current
        }
        return order
    }
}

extension CompactJSONWriter {
    /// The order of two keys' UTF-8 bytes (negative, zero, positive), as `JSONEncoder` sorts them.
    static func compare(_ a: String, _ b: String) -> Int {
        var a = a
        var b = b
        return a.withUTF8 { a in
            b.withUTF8 { b in
                let common = min(a.count, b.count)
                if common > 0 {
                    let order = memcmp(a.baseAddress!, b.baseAddress!, common)
                    if order != 0 { return Int(order) }
                }
                return a.count - b.count
            }
        }
    }
}

/// One member of an object being written: its key and where its `"key":value` bytes are.
struct CompactJSONMember {
    var key: String
    var start: Int
    var end: Int
}
