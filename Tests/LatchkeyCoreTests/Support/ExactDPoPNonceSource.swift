import Foundation

@testable import LatchkeyCore

/// Accepts exactly one nonce value (vector tests and verifier tests).
struct ExactDPoPNonceSource: DPoPNonceSource {
    let value: String
    func currentNonce() -> String { value }
    func isValid(_ nonce: String) -> Bool { ConstantTime.equals(nonce, value) }
}
