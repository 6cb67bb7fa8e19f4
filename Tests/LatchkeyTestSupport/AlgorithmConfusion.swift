import Crypto
import Foundation
import LatchkeyCore

/// Hostile tokens that try to make a verifier use a published key with an algorithm it was not made for.
public enum AlgorithmConfusion {
    /// A compact JWS with exactly `header` and `payload`; `sign` gets the signing input.
    public static func jws(header: [String: String], payload: Data, sign: (Data) throws -> Data) rethrows -> String {
        let headerJSON = try! JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let input = Base64URL.encode(headerJSON) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
    }

    /// Forgeries against `target` (a published key with `kid`), each named: a header naming every other
    /// implemented algorithm signed with a fresh key of that algorithm, HS256 keyed with the target's public
    /// key material (RSA modulus, EC/OKP coordinates, the JWK JSON), and `none`.
    public static func forgeries(against target: JWK, payload: Data, typ: String = "at+jwt") throws -> [(
        name: String, token: String
    )] {
        let kid = target.kid ?? ""
        var tokens: [(name: String, token: String)] = []
        for algorithm in JWSAlgorithm.allCases where algorithm.rawValue != target.alg {
            let key = try SigningKey.generate(algorithm)
            tokens.append(
                (
                    "\(algorithm.rawValue) header, fresh key",
                    try jws(
                        header: ["alg": algorithm.rawValue, "kid": kid, "typ": typ], payload: payload
                    ) { try key.sign($0) }
                ))
        }
        var secrets: [(String, Data)] = [("jwk json", try JSONEncoder().encode(target))]
        for (member, value) in [("n", target.n), ("x", target.x), ("y", target.y)] {
            if let value, let bytes = Base64URL.decode(value) { secrets.append((member, bytes)) }
        }
        for (name, secret) in secrets {
            tokens.append(
                (
                    "HS256 keyed with \(name)",
                    jws(header: ["alg": "HS256", "kid": kid, "typ": typ], payload: payload) {
                        Data(HMAC<SHA256>.authenticationCode(for: $0, using: SymmetricKey(data: secret)))
                    }
                ))
        }
        tokens.append(("none", jws(header: ["alg": "none", "kid": kid, "typ": typ], payload: payload) { _ in Data() }))
        return tokens
    }
}
