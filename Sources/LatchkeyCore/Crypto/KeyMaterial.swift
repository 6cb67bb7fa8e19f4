import Crypto
import Foundation

/// Decoding of symmetric keys from configuration (KEKs, hashing keys, nonce secrets).
public enum KeyMaterial {
    /// Why a configured key was refused (the value itself is never echoed).
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case notBase64
        case tooShort(minimumBytes: Int)
        case wrongLength(expectedBytes: Int)

        public var description: String {
            switch self {
            case .notBase64: return "key is not base64 or base64url"
            case .tooShort(let minimum): return "key must be at least \(minimum) bytes"
            case .wrongLength(let expected): return "key must be exactly \(expected) bytes"
            }
        }
    }

    /// Accepts standard base64 (padding optional) or strict base64url, surrounding whitespace trimmed.
    public static func decode(_ value: String) throws(Failure) -> Data {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if let data = Base64URL.decode(trimmed) { return data }
        var padded = trimmed
        while padded.utf8.count % 4 != 0 { padded += "=" }
        if let data = Data(base64Encoded: padded) { return data }
        throw .notBase64
    }

    /// A key of at least `minimumBytes` (default 32) from a configuration value.
    public static func symmetricKey(fromConfiguration value: String, minimumBytes: Int = 32) throws(Failure)
        -> SymmetricKey
    {
        let data = try decode(value)
        guard data.count >= minimumBytes else { throw .tooShort(minimumBytes: minimumBytes) }
        return SymmetricKey(data: data)
    }

    /// A fresh random 256-bit key encoded as base64url, for generating configuration.
    public static func generateConfigurationValue() -> String {
        Base64URL.encode(SecureRandom.bytes(count: 32))
    }
}
