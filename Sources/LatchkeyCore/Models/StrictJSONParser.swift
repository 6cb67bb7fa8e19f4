import Foundation

/// A strict RFC 8259 parser from bytes to ``JSONValue``, for input from outside the process.
///
/// Faster than going through `JSONDecoder` (no trial decoding per value), and stricter: duplicate
/// object members, nesting deeper than `maximumDepth`, invalid UTF-8, unpaired surrogate escapes
/// and numbers that overflow a `Double` are errors rather than silently resolved. The audit log
/// hashes what this produces, so "one document, one meaning" matters more than leniency.
public struct StrictJSONParser {
    /// Why a document was refused, with the byte offset where parsing stopped.
    public struct Failure: Error, Sendable, CustomStringConvertible, Equatable {
        public var offset: Int
        public var reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static let defaultMaximumDepth = 64

    private let bytes: [UInt8]
    private let maximumDepth: Int
    private var index = 0

    /// Parses one JSON document; anything but whitespace after it is an error.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = defaultMaximumDepth) throws(Failure) -> JSONValue {
        var parser = StrictJSONParser(bytes: bytes, maximumDepth: maximumDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected data after the document") }
        return value
    }

    /// Parses UTF-8 text.
    public static func parse(_ text: String, maximumDepth: Int = defaultMaximumDepth) throws(Failure) -> JSONValue {
        try parse(Array(text.utf8), maximumDepth: maximumDepth)
    }

    /// A member name fit to echo in an error: quoted when short and printable ASCII, otherwise a placeholder
    /// (names come from outside and may be long or hold anything).
    public static func printableName(_ name: String) -> String {
        let printable = name.utf8.allSatisfy {
            $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
        }
        return printable && name.utf8.count <= 40 ? "\"\(name)\"" : "(a member name that cannot be shown)"
    }

    private init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    private func failure(_ reason: String) -> Failure {
        Failure(offset: index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw failure("invalid literal") }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maximumDepth else { throw failure("nesting deeper than \(maximumDepth)") }
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a member name")
            }
            let start = index
            let name = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            guard members.updateValue(value, forKey: name) == nil else {
                throw Failure(offset: start, reason: "duplicate member \(Self.printableName(name))")
            }
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maximumDepth else { throw failure("nesting deeper than \(maximumDepth)") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw failure("expected ',' or ']'")
            }
        }
    }

    private mutating func parseString() throws(Failure) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = bytes[start..<index]
                index += 1
                return try decodeUTF8(slice, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("unescaped control character in string") }
            index += 1
        }
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try decodeUTF8(buffer[...], at: start)
            case UInt8(ascii: "\\"):
                index += 1
                try appendEscape(to: &buffer)
            case 0..<0x20:
                throw failure("unescaped control character in string")
            default:
                buffer.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    private func decodeUTF8(_ slice: ArraySlice<UInt8>, at offset: Int) throws(Failure) -> String {
        // ASCII is valid UTF-8 as it is; the generic validating initialiser costs a metadata lookup per call.
        if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
        guard let text = String(validating: slice, as: UTF8.self) else {
            throw Failure(offset: offset, reason: "string is not valid UTF-8")
        }
        return text
    }

    private mutating func appendEscape(to buffer: inout [UInt8]) throws(Failure) {
        guard index < bytes.count else { throw failure("unterminated escape") }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escape)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("unpaired surrogate escape") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("unpaired surrogate escape")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid escape") }
            buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw failure("invalid escape")
        }
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(Failure) -> Double {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count else { throw failure("truncated number") }
        let integerStart = index
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            guard consumeDigits() > 0 else { throw failure("invalid number") }
        }
        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard consumeDigits() > 0 else { throw failure("digits expected after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard consumeDigits() > 0 else { throw failure("digits expected in exponent") }
        }
        // Whole numbers of up to 15 digits (timestamps, lifetimes) are exact in a Double: summed here instead
        // of going through a String and the C library's conversion.
        if integral, index - integerStart <= 15 {
            var value: Int64 = 0
            for digit in bytes[integerStart..<index] { value = value * 10 + Int64(digit - UInt8(ascii: "0")) }
            return negative ? -Double(value) : Double(value)
        }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else {
            throw Failure(offset: start, reason: "number out of range")
        }
        return value
    }

    private mutating func consumeDigits() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index - start
    }
}

extension StrictJSONParser {
    /// Decodes `type` from a document fetched from outside once this parser accepted it, so `decoder`
    /// never resolves what it refuses (which of two duplicate members wins, broken UTF-8, 1e400).
    public static func decode<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], decoder: JSONDecoder = LatchkeyJSON.makeDecoder()
    ) throws -> T {
        _ = try parse(bytes)
        return try decoder.decode(type, from: Data(bytes))
    }
}
