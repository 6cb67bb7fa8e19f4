import Crypto
import Foundation

/// AES-256-GCM envelope encryption for private keys at rest, under a key-encryption key (KEK).
///
/// Format v1: `0x01 || kekID (4 bytes) || nonce (12) || ciphertext || tag (16)`.
/// The 5-byte prefix is authenticated together with the caller's associated data (e.g. tenant +
/// kid via `associatedData(tenant:kid:)`), so a ciphertext copied into another row, or a header
/// edited to pick another KEK, fails to open. `kekID` (the first 4 bytes of
/// HMAC-SHA256(KEK, "latchkey-kek-id")) lets old rows open under a previous KEK during rotation.
public struct KeyEnvelope: Sendable {
    /// Why an envelope could not be made or opened (deliberately coarse: no oracle for attackers).
    public enum Failure: Error, Sendable, Equatable {
        case invalidKey
        case malformed
        case unknownKey
        case authenticationFailed
    }

    static let version: UInt8 = 1
    static let headerLength = 5
    static let nonceLength = 12
    static let tagLength = 16

    private let current: SymmetricKey
    private let currentID: [UInt8]
    private let previous: [(id: [UInt8], key: SymmetricKey)]

    /// - Parameters:
    ///   - keyEncryptionKey: 32 bytes; new envelopes are sealed with it.
    ///   - previousKeys: older KEKs still accepted by `open` during rotation.
    public init(keyEncryptionKey: SymmetricKey, previousKeys: [SymmetricKey] = []) throws(Failure) {
        guard keyEncryptionKey.bitCount == 256, previousKeys.allSatisfy({ $0.bitCount == 256 }) else {
            throw .invalidKey
        }
        current = keyEncryptionKey
        currentID = Self.identifier(of: keyEncryptionKey)
        previous = previousKeys.map { (Self.identifier(of: $0), $0) }
    }

    /// Builds the envelope from configuration values (base64 or base64url of exactly 32 bytes).
    public init(configuration value: String, previous previousValues: [String] = []) throws(Failure) {
        func key(_ value: String) throws(Failure) -> SymmetricKey {
            guard let data = try? KeyMaterial.decode(value), data.count == 32 else { throw .invalidKey }
            return SymmetricKey(data: data)
        }
        var previousKeys: [SymmetricKey] = []
        for value in previousValues { previousKeys.append(try key(value)) }
        try self.init(keyEncryptionKey: try key(value), previousKeys: previousKeys)
    }

    /// Unambiguous associated data binding an envelope to one signing-key row.
    public static func associatedData(tenant: String, kid: String) -> Data {
        var data = Data("latchkey-signing-key".utf8)
        for field in [tenant, kid] {
            let bytes = Data(field.utf8)
            var length = UInt32(bytes.count).bigEndian
            data.append(Data(bytes: &length, count: 4))
            data.append(bytes)
        }
        return data
    }

    /// Encrypts `plaintext` under the current KEK with a fresh random nonce.
    public func seal<Plaintext: DataProtocol, AAD: DataProtocol>(_ plaintext: Plaintext, associatedData: AAD)
        throws(Failure) -> Data
    {
        let header = Data([Self.version] + currentID)
        do {
            let box = try AES.GCM.seal(
                plaintext, using: current, nonce: AES.GCM.Nonce(),
                authenticating: header + Data(associatedData))
            return header + Data(box.nonce) + box.ciphertext + box.tag
        } catch {
            throw .malformed
        }
    }

    /// Decrypts an envelope made by `seal` with the same associated data.
    public func open<Envelope: DataProtocol, AAD: DataProtocol>(_ envelope: Envelope, associatedData: AAD)
        throws(Failure) -> Data
    {
        let bytes = Array(envelope)
        guard bytes.count >= Self.headerLength + Self.nonceLength + Self.tagLength, bytes[0] == Self.version else {
            throw .malformed
        }
        let id = Array(bytes[1..<Self.headerLength])
        let key: SymmetricKey
        if id == currentID {
            key = current
        } else if let match = previous.first(where: { $0.id == id }) {
            key = match.key
        } else {
            throw .unknownKey
        }
        let nonceEnd = Self.headerLength + Self.nonceLength
        let tagStart = bytes.count - Self.tagLength
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try AES.GCM.Nonce(data: bytes[Self.headerLength..<nonceEnd]),
                ciphertext: bytes[nonceEnd..<tagStart], tag: bytes[tagStart...])
            return try AES.GCM.open(
                box, using: key,
                authenticating: Data(bytes[0..<Self.headerLength]) + Data(associatedData))
        } catch {
            throw .authenticationFailed
        }
    }

    private static func identifier(of key: SymmetricKey) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Data("latchkey-kek-id".utf8), using: key).prefix(4))
    }
}
