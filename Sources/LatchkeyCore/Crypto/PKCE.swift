import Crypto
import Foundation

/// Proof Key for Code Exchange (RFC 7636): verifier syntax, S256 challenges, verification.
public enum PKCE {
    /// `code_challenge_method` values; parsing is case-sensitive as in RFC 7636 §4.3.
    public enum Method: String, Sendable, Codable, CaseIterable {
        case s256 = "S256"
        case plain
    }

    /// Why a verifier was refused; every case maps to OAuth `invalid_grant` at the token endpoint.
    public enum Failure: Error, Sendable, Equatable {
        /// The verifier is not 43–128 characters of `[A-Za-z0-9-._~]`.
        case invalidVerifierSyntax
        /// `plain` was used but the caller did not allow it.
        case plainNotAllowed
        /// The verifier does not hash (or equal) to the stored challenge.
        case mismatch
    }

    /// RFC 7636 §4.1: 43–128 characters of the unreserved set.
    public static func isValidVerifier(_ verifier: String) -> Bool {
        let bytes = verifier.utf8
        guard (43...128).contains(bytes.count) else { return false }
        return bytes.allSatisfy(isUnreserved)
    }

    /// The same syntax applies to challenges (an S256 challenge is always 43 characters).
    public static func isValidChallenge(_ challenge: String, method: Method = .s256) -> Bool {
        switch method {
        case .s256: return challenge.utf8.count == 43 && Base64URL.decode(challenge)?.count == 32
        case .plain: return isValidVerifier(challenge)
        }
    }

    /// BASE64URL(SHA256(ASCII(verifier))).
    public static func s256Challenge(for verifier: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(verifier.utf8)))
    }

    /// A fresh random verifier (32 random bytes → 43 characters), for clients and tests.
    public static func generateVerifier() -> String {
        Base64URL.encode(SecureRandom.bytes(count: 32))
    }

    /// Checks `verifier` against the challenge stored with the code, in constant time.
    /// `plain` is refused unless `allowPlain` is set (public clients must use S256).
    public static func verify(
        verifier: String, challenge: String, method: Method,
        allowPlain: Bool = false
    ) throws(Failure) {
        guard isValidVerifier(verifier) else { throw .invalidVerifierSyntax }
        let computed: String
        switch method {
        case .s256:
            computed = s256Challenge(for: verifier)
        case .plain:
            guard allowPlain else { throw .plainNotAllowed }
            computed = verifier
        }
        guard ConstantTime.equals(computed, challenge) else { throw .mismatch }
    }

    /// Boolean form of `verify`.
    public static func matches(verifier: String, challenge: String, method: Method, allowPlain: Bool = false) -> Bool {
        (try? verify(verifier: verifier, challenge: challenge, method: method, allowPlain: allowPlain)) != nil
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
