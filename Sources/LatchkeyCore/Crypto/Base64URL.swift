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
        let input = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int((chunk >> 18) & 0x3F)])
            output.append(alphabet[Int((chunk >> 12) & 0x3F)])
            output.append(alphabet[Int((chunk >> 6) & 0x3F)])
            output.append(alphabet[Int(chunk & 0x3F)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let chunk = UInt32(input[index]) << 16
            output.append(alphabet[Int((chunk >> 18) & 0x3F)])
            output.append(alphabet[Int((chunk >> 12) & 0x3F)])
        case 2:
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int((chunk >> 18) & 0x3F)])
            output.append(alphabet[Int((chunk >> 12) & 0x3F)])
            output.append(alphabet[Int((chunk >> 6) & 0x3F)])
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes strict unpadded base64url; `nil` for anything that is not exactly that.
    public static func decode<S: StringProtocol>(_ string: S) -> Data? {
        decodeBytes(string.utf8).map { Data($0) }
    }

    /// Decodes strict unpadded base64url from UTF-8 code units (avoids a String copy on hot paths).
    public static func decodeBytes<Input: Collection>(_ input: Input) -> [UInt8]? where Input.Element == UInt8 {
        let count = input.count
        // A single leftover character carries only 6 bits: no byte string encodes to that.
        if count % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for char in input {
            let value = decodeTable[Int(char)]
            if value == 0xFF { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        // Leftover bits must be zero, otherwise two strings would decode to the same bytes.
        if bits > 0 && (accumulator & ((1 << UInt32(bits)) - 1)) != 0 { return nil }
        return output
    }
}
