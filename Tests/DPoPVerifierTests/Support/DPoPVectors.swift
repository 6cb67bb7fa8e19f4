import Foundation
import Shared
@testable import DPoPVerifier

/// The shared DPoP proof vectors (`../shared/vectors`, or `LATCHKEY_VECTORS_DIR`); missing means failure.
enum DPoPVectors {
    struct Request: Decodable {
        let method: String
        let url: String
    }

    struct Vector: Decodable {
        let name: String
        let proof: String
        let request: Request
        let accessToken: String?
        let expectedJKT: String?
        let requiredNonce: String?
        let now: Int64?
        let iatWindowSeconds: Int64?
        let expected: String?

        enum CodingKeys: String, CodingKey {
            case name, proof, request, now, expected
            case accessToken = "access_token"
            case expectedJKT = "expected_jkt"
            case requiredNonce = "required_nonce"
            case iatWindowSeconds = "iat_window_seconds"
        }
    }

    struct File: Decodable {
        let clockNow: Int64
        let iatWindowSeconds: Int64
        let vectors: [Vector]
        let replay: ReplayCase?

        enum CodingKeys: String, CodingKey {
            case vectors, replay
            case clockNow = "clock_now"
            case iatWindowSeconds = "iat_window_seconds"
        }
    }

    struct ReplayCase: Decodable {
        let proof: String
        let request: Request
        let accessToken: String?
        let expectedJKT: String?

        enum CodingKeys: String, CodingKey {
            case proof, request
            case accessToken = "access_token"
            case expectedJKT = "expected_jkt"
        }
    }

    static func load(_ name: String) throws -> File {
        let directory: URL
        if let override = ProcessInfo.processInfo.environment["LATCHKEY_VECTORS_DIR"], !override.isEmpty {
            directory = URL(fileURLWithPath: override, isDirectory: true)
        } else {
            var candidate = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            while candidate.path != "/", !FileManager.default.fileExists(atPath: candidate.appendingPathComponent("Package.swift").path) {
                candidate = candidate.deletingLastPathComponent()
            }
            directory = candidate.deletingLastPathComponent().appendingPathComponent("shared/vectors", isDirectory: true)
        }
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw TestFailure("vector file \(url.path) is missing (set LATCHKEY_VECTORS_DIR)")
        }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
    }

    /// Splits a vector URL into the origin the sidecar is configured with and the target it receives
    /// (the fragment stays behind: HTTP never sends it).
    static func split(_ url: String) throws -> (origin: String, target: String) {
        guard let schemeEnd = url.range(of: "://"),
              let pathStart = url[schemeEnd.upperBound...].firstIndex(of: "/") else { throw TestFailure("bad vector URL \(url)") }
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
        return VerifiedAccessToken(issuer: "https://as.example.com/t/acme", tenant: TenantSlug(rawValue: "acme")!,
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
