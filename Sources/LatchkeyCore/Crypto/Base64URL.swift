import Foundation

/// Strict base64url (RFC 4648 §5) without padding, as JOSE requires (RFC 7515 §2).
///
/// Decoding is deliberately unforgiving: padding, the standard-alphabet characters `+` and `/`,
/// whitespace, impossible lengths and non-zero trailing bits are all refused, so every byte
/// string has exactly one accepted encoding (no malleable tokens, thumbprints or signatures).
public enum Base64URL {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0xFF marks bytes outside the alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    /// Encodes bytes as unpadded base64url.
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        // One pass over contiguous bytes (digests, `Data`, arrays) into a string of the exact length.
        if let encoded = bytes.withContiguousStorageIfAvailable(encode) { return encoded }
        return Array(bytes).withUnsafeBufferPointer(encode)
    }

    private static func encode(_ input: UnsafeBufferPointer<UInt8>) -> String {
        let length = (input.count * 4 + 2) / 3
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: length) { output in
                var index = 0
                var out = 0
                while index + 3 <= input.count {
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    output[out] = alphabet[Int((chunk >> 18) & 0x3F)]
                    output[out + 1] = alphabet[Int((chunk >> 12) & 0x3F)]
                    output[out + 2] = alphabet[Int((chunk >> 6) & 0x3F)]
                    output[out + 3] = alphabet[Int(chunk & 0x3F)]
                    index += 3
                    out += 4
                }
                switch input.count - index {
                case 1:
                    let chunk = UInt32(input[index]) << 16
                    output[out] = alphabet[Int((chunk >> 18) & 0x3F)]
                    output[out + 1] = alphabet[Int((chunk >> 12) & 0x3F)]
                    out += 2
                case 2:
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                    output[out] = alphabet[Int((chunk >> 18) & 0x3F)]
                    output[out + 1] = alphabet[Int((chunk >> 12) & 0x3F)]
                    output[out + 2] = alphabet[Int((chunk >> 6) & 0x3F)]
                    out += 3
                default:
                    break
                }
                return out
            }
        }
    }

    /// Decodes strict unpadded base64url; `nil` for anything that is not exactly that.
    public static func decode<S: StringProtocol>(_ string: S) -> Data? {
        decodeBytes(string.utf8).map { Data($0) }
    }

    /// Decodes strict unpadded base64url from UTF-8 code units (avoids a String copy on hot paths).
    public static func decodeBytes<Input: Collection>(_ input: Input) -> [UInt8]? where Input.Element == UInt8 {
        // Native strings and arrays are contiguous: decode them in one tight loop rather than through
        // the collection's iterator (which, unspecialised across modules, costs a call per byte).
        if let decoded = input.withContiguousStorageIfAvailable(decodeBytes) { return decoded }
        return Array(input).withUnsafeBufferPointer(decodeBytes)
    }

    private static func decodeBytes(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = input.count
        // A single leftover character carries only 6 bits: no byte string encodes to that.
        if count % 4 == 1 { return nil }
        let length = count / 4 * 3 + max(0, count % 4 - 1)
        var valid = true
        let output = decodeTable.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
                var accumulator: UInt32 = 0
                var bits = 0
                var out = 0
                for char in input {
                    let value = table[Int(char)]
                    if value == 0xFF {
                        valid = false
                        break
                    }
                    accumulator = (accumulator << 6) | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        output[out] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        out += 1
                    }
                }
                // Leftover bits must be zero, otherwise two strings would decode to the same bytes.
                if valid, bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { valid = false }
                initialized = valid ? out : 0
            }
        }
        return valid ? output : nil
    }
}
