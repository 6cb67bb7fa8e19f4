import Crypto

extension KeyedHasher {
    /// A key for one purpose derived from the hashing key (HMAC as a KDF over a distinct `label`), so
    /// no extra secret needs configuring and every replica derives the same key.
    public func deriveKey(_ label: String) -> SymmetricKey {
        SymmetricKey(data: Base64URL.decodeBytes(Array(hash(label).utf8)) ?? [])
    }
}
