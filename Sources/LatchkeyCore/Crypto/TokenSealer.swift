import Crypto
import Foundation

/// Opaque tokens that carry their own state, which only the server can read or make: base64url of a version
/// byte, a 256-bit salt (from the CSPRNG, so a token is at least as unguessable as a random secret), and the
/// state sealed with AES-256-GCM under a key of its own, derived from the sealing key and the salt.
///
/// A key per token keeps AES-GCM far from its limit on messages per key and nonce, however many tokens are
/// sealed. A token derived from another (``seal(_:associatedData:derivedFrom:)`` with a `derivedFrom`) takes
/// its salt from a keyed hash of that input and of the state itself, so the same input and state always seal
/// to the same token, and two different states never share a key.
///
/// The associated data binds a token to what the request carries anyway (tenant, client, redirect URI): a
/// token presented with anything else does not open.
public struct TokenSealer: Sendable {
    private static let version: UInt8 = 1
    private static let saltLength = 32
    /// Longer input is not a token of ours; it is refused before any decoding.
    public static let maximumTokenLength = 4096

    private let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// The sealed token: a random salt, or, with `derivedFrom`, the salt computed from it and `plaintext`.
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8], derivedFrom: [UInt8]? = nil) throws -> String {
        let salt: [UInt8]
        if let derivedFrom {
            var input: [UInt8] = Array("salt".utf8)
            appendLengthPrefixed(derivedFrom, to: &input)
            input += plaintext
            salt = Array(HMAC<SHA256>.authenticationCode(for: input, using: key).prefix(Self.saltLength))
        } else {
            salt = SecureRandom.bytes(count: Self.saltLength)
        }
        // Each key seals one state only, so a fixed nonce never repeats under a key with different input.
        let sealed = try AES.GCM.seal(
            plaintext, using: messageKey(salt), nonce: Self.nonce,
            authenticating: authenticated(salt: salt, associatedData))
        var token: [UInt8] = [Self.version]
        token.reserveCapacity(1 + Self.saltLength + plaintext.count + 16)
        token += salt
        token += sealed.ciphertext
        token += sealed.tag
        return Base64URL.encode(token)
    }

    /// The state, or nil when `token` is not one of ours, was altered, or is presented with other
    /// associated data than it was sealed with.
    public func open(_ token: String, associatedData: [UInt8]) -> [UInt8]? {
        guard token.utf8.count <= Self.maximumTokenLength,
            let bytes = Base64URL.decodeBytes(Array(token.utf8)),
            bytes.count >= 1 + Self.saltLength + 16, bytes[0] == Self.version
        else { return nil }
        let salt = Array(bytes[1..<(1 + Self.saltLength)])
        let body = bytes[(1 + Self.saltLength)...]
        guard
            let box = try? AES.GCM.SealedBox(
                nonce: Self.nonce, ciphertext: body.dropLast(16), tag: body.suffix(16)),
            let plaintext = try? AES.GCM.open(
                box, using: messageKey(salt), authenticating: authenticated(salt: salt, associatedData))
        else { return nil }
        return Array(plaintext)
    }

    private static let nonce = try! AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12))

    private func messageKey(_ salt: [UInt8]) -> SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array("key".utf8) + salt, using: key))
    }

    private func authenticated(salt: [UInt8], _ associatedData: [UInt8]) -> [UInt8] {
        [Self.version] + salt + associatedData
    }

    private func appendLengthPrefixed(_ bytes: [UInt8], to output: inout [UInt8]) {
        let count = UInt32(bytes.count)
        output += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
        output += bytes
    }
}

/// The fields of a sealed state, in a fixed order: integers big-endian, UUIDs as 16 bytes, strings as UTF-8 with
/// a two-byte length (0xFFFF: absent).
public struct SealedFields: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// The strings in order, as associated data; nil when one is 65,535 bytes or longer.
    public init?(strings: [String]) {
        for string in strings {
            guard append(string) else { return nil }
        }
    }

    public mutating func append(_ value: UInt8) { bytes.append(value) }

    public mutating func append(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((bits >> UInt64(shift)) & 0xFF)) }
    }

    public mutating func append(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes += $0 }
    }

    /// False, with nothing appended, for a string of 65,535 bytes or more.
    @discardableResult
    public mutating func append(_ value: String?) -> Bool {
        guard let value else {
            bytes += [0xFF, 0xFF]
            return true
        }
        let utf8 = Array(value.utf8)
        guard utf8.count < 0xFFFF else { return false }
        bytes += [UInt8(utf8.count >> 8), UInt8(utf8.count & 0xFF)]
        bytes += utf8
        return true
    }
}

/// Reads what ``SealedFields`` wrote, in the same order; nil for anything short or malformed.
public struct SealedFieldsReader: Sendable {
    private let bytes: [UInt8]
    private var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { offset == bytes.count }

    public mutating func uint8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func int64() -> Int64? {
        guard let raw = take(8) else { return nil }
        return Int64(bitPattern: raw.reduce(0) { $0 << 8 | UInt64($1) })
    }

    public mutating func uuid() -> UUID? {
        guard let raw = take(16) else { return nil }
        return UUID(
            uuid: (
                raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11],
                raw[12], raw[13], raw[14], raw[15]
            ))
    }

    /// `.some(nil)` for an absent string; nil when malformed.
    public mutating func string() -> String?? {
        guard let prefix = take(2) else { return nil }
        let count = Int(prefix[0]) << 8 | Int(prefix[1])
        if count == 0xFFFF { return .some(nil) }
        guard let raw = take(count) else { return nil }
        guard let string = String(validating: raw, as: UTF8.self) else { return nil }
        return .some(string)
    }

    private mutating func take(_ count: Int) -> [UInt8]? {
        guard bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }
}
