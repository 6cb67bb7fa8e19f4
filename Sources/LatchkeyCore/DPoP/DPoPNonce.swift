import Crypto
import Foundation

/// Issues and checks server-provided DPoP nonces (RFC 9449 §8).
public protocol DPoPNonceSource: Sendable {
    /// The nonce to send in `DPoP-Nonce` now.
    func currentNonce() -> String
    /// True when a client may still use `nonce`.
    func isValid(_ nonce: String) -> Bool
}

/// Stateless rotating nonces: `base64url(step || HMAC-SHA256(secret, label || step)[0..<16])`
/// where `step = floor(unixTime / stepSeconds)` as 8 big-endian bytes (32 characters in all).
///
/// Every replica configured with the same secret issues and accepts the same nonces without
/// shared state. A nonce is accepted during its own step and the next one, so it lives between
/// `stepSeconds` and `2 × stepSeconds`. 128 bits of MAC are ample for a value that expires in minutes.
public struct HMACDPoPNonceSource: DPoPNonceSource {
    private let key: SymmetricKey
    public let stepSeconds: Int64
    private let clock: any WallClock

    static let macLength = 16
    static let label = Data("latchkey-dpop-nonce-v1".utf8)

    /// - Parameters:
    ///   - secret: at least 32 bytes, shared by all replicas (from configuration).
    ///   - stepSeconds: rotation period, default 300.
    public init(secret: SymmetricKey, stepSeconds: Int64 = 300, clock: any WallClock = SystemWallClock())
        throws(KeyMaterial.Failure)
    {
        guard secret.bitCount >= 256 else { throw .tooShort(minimumBytes: 32) }
        precondition(stepSeconds > 0, "stepSeconds must be positive")
        self.key = secret
        self.stepSeconds = stepSeconds
        self.clock = clock
    }

    /// Builds the source from a configuration value (base64 or base64url of ≥ 32 bytes).
    public init(configuration value: String, stepSeconds: Int64 = 300, clock: any WallClock = SystemWallClock())
        throws(KeyMaterial.Failure)
    {
        try self.init(
            secret: try KeyMaterial.symmetricKey(fromConfiguration: value), stepSeconds: stepSeconds, clock: clock)
    }

    public func currentNonce() -> String {
        nonce(forStep: currentStep())
    }

    public func isValid(_ nonce: String) -> Bool {
        guard nonce.utf8.count == 32, let bytes = Base64URL.decodeBytes(nonce.utf8), bytes.count == 8 + Self.macLength
        else {
            return false
        }
        let step = bytes[0..<8].reduce(Int64(0)) { ($0 << 8) | Int64($1) }
        let now = currentStep()
        guard step == now || step == now - 1 else { return false }
        return ConstantTime.equals(mac(forStep: step), bytes[8...])
    }

    func currentStep() -> Int64 {
        let seconds = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        return seconds >= 0 ? seconds / stepSeconds : (seconds - stepSeconds + 1) / stepSeconds
    }

    func nonce(forStep step: Int64) -> String {
        Base64URL.encode(Self.stepBytes(step) + mac(forStep: step))
    }

    private func mac(forStep step: Int64) -> [UInt8] {
        var input = Self.label
        input.append(contentsOf: Self.stepBytes(step))
        return Array(HMAC<SHA256>.authenticationCode(for: input, using: key).prefix(Self.macLength))
    }

    private static func stepBytes(_ step: Int64) -> [UInt8] {
        withUnsafeBytes(of: UInt64(bitPattern: step).bigEndian) { Array($0) }
    }
}
