import Foundation

/// RFC 8785 JSON Canonicalization Scheme (JCS) for ``JSONValue``: the byte form the audit chain hashes.
///
/// Members sorted by their UTF-16 code units, no insignificant whitespace, strings escaped the
/// way ECMAScript's `JSON.stringify` does, numbers in ECMAScript `Number.prototype.toString`
/// form (so `1.0` and `1` are both `1`). Parsing the output and canonicalising again gives the
/// same bytes, which is what lets `/verify` recompute a hash from a row PostgreSQL stored as `jsonb`.
public enum CanonicalJSON {
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(512)
        write(value, into: &output)
        return output
    }

    public static func write(_ value: JSONValue, into output: inout [UInt8]) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number): output.append(contentsOf: formatNumber(number).utf8)
        case .string(let text): writeString(text, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let names = members.keys.sorted(by: precedes)
            for (index, name) in names.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(name, into: &output)
                output.append(UInt8(ascii: ":"))
                write(members[name] ?? .null, into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// RFC 8785 member order: by UTF-16 code units. UTF-8 byte order agrees except where a
    /// supplementary character meets one from U+E000…U+FFFF (both lead bytes ≥ 0xEE), so bytes
    /// are compared and UTF-16 decides only in that case.
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        var left = lhs.utf8.makeIterator()
        var right = rhs.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return false
            case (nil, _): return true
            case (_, nil): return false
            case (let a?, let b?) where a == b: continue
            case (let a?, let b?):
                return a >= 0xEE && b >= 0xEE ? lhs.utf16.lexicographicallyPrecedes(rhs.utf16) : a < b
            }
        }
    }

    public static func writeString(_ text: String, into output: inout [UInt8]) {
        var text = text
        // Native strings are contiguous UTF-8; this makes the scan and copy plain buffer work.
        text.withUTF8 { bytes in
            output.append(UInt8(ascii: "\""))
            var start = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                appendEscape(byte, into: &output)
                start = index + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
            output.append(UInt8(ascii: "\""))
        }
    }

    /// The `JSON.stringify` escape of a quote, backslash or control character.
    private static func appendEscape(_ byte: UInt8, into output: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
        case 0x08: output.append(contentsOf: #"\b"#.utf8)
        case 0x0C: output.append(contentsOf: #"\f"#.utf8)
        case 0x0A: output.append(contentsOf: #"\n"#.utf8)
        case 0x0D: output.append(contentsOf: #"\r"#.utf8)
        case 0x09: output.append(contentsOf: #"\t"#.utf8)
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            output.append(contentsOf: #"\u00"#.utf8)
            output.append(hex[Int(byte >> 4)])
            output.append(hex[Int(byte & 0x0F)])
        }
    }

    /// ECMAScript `Number.prototype.toString` of a finite double, from Swift's shortest round-trip digits.
    public static func formatNumber(_ number: Double) -> String {
        guard number.isFinite else { return "null" }
        if number == 0 { return "0" }
        let (digits, exponent) = shortestDigits(abs(number))
        let k = digits.count
        let n = exponent
        var text = number < 0 ? "-" : ""
        if k <= n && n <= 21 {
            text += digits + String(repeating: "0", count: n - k)
        } else if 0 < n && n <= 21 {
            text += digits.prefix(n) + "." + digits.dropFirst(n)
        } else if -6 < n && n <= 0 {
            text += "0." + String(repeating: "0", count: -n) + digits
        } else {
            let e = n - 1
            text +=
                digits.prefix(1) + (k > 1 ? "." + digits.dropFirst() : "") + "e" + (e > 0 ? "+" : "-") + String(abs(e))
        }
        return text
    }

    /// The significant digits `d₁…dₖ` and `n` with value = 0.d₁…dₖ × 10ⁿ (no leading or trailing zeros).
    static func shortestDigits(_ magnitude: Double) -> (String, Int) {
        let description = magnitude.description
        let parts = description.split(separator: "e", maxSplits: 1)
        let exponent = parts.count == 2 ? Int(parts[1]) ?? 0 : 0
        let mantissa = parts[0].split(separator: ".", maxSplits: 1)
        let integerPart = mantissa[0]
        let fractionPart = mantissa.count == 2 ? mantissa[1] : ""
        var digits = Substring(integerPart + fractionPart)
        var pointPosition = integerPart.count + exponent
        while digits.first == "0" {
            digits = digits.dropFirst()
            pointPosition -= 1
        }
        while digits.last == "0" { digits = digits.dropLast() }
        return (String(digits), pointPosition)
    }
}
