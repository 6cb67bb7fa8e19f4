import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport

@testable import DPoPVerifier

/// Helpers for running the shared proof vectors (``SharedVectors``) through the sidecar.
enum DPoPVectors {
    /// Splits a vector URL into the origin the sidecar is configured with and the target it receives
    /// (the fragment stays behind: HTTP never sends it).
    static func split(_ url: String) throws -> (origin: String, target: String) {
        guard let schemeEnd = url.range(of: "://"),
            let pathStart = url[schemeEnd.upperBound...].firstIndex(of: "/")
        else { throw TestFailure("bad vector URL \(url)") }
        var target = String(url[pathStart...])
        if let hash = target.firstIndex(of: "#") { target = String(target[..<hash]) }
        return (String(url[..<pathStart]), target)
    }
}

/// The vectors' access tokens are opaque strings: no key signed them, and no JWT can be minted
/// whose SHA-256 equals their `ath`. This stands in for the JWT signature check only: it accepts
/// exactly the vector's token and binds it to the vector's `expected_jkt`, so `ath`, `cnf.jkt`,
/// every proof check, replay, nonce and the error responses run through the real sidecar path.
struct VectorTokenValidator: AccessTokenValidator {
    let token: String
    let jkt: String?

    func validate(_ presented: String) async throws(AccessTokenError) -> VerifiedAccessToken {
        guard presented == token else { throw .invalidSignature("not the vector's token") }
        return VerifiedAccessToken(
            issuer: "https://as.example.com/t/acme", tenant: TenantSlug(rawValue: "acme")!,
            subject: "vector-user", clientID: "vector-client", scope: nil, jkt: jkt,
            expiresAt: Int64.max)
    }
}

/// Accepts exactly one nonce value (the vectors' fixed `n-123`).
struct ExactNonceSource: DPoPNonceSource {
    let value: String
    func currentNonce() -> String { value }
    func isValid(_ nonce: String) -> Bool { ConstantTime.equals(nonce, value) }
}
