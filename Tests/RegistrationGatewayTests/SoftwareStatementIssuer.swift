import Foundation
import LatchkeyCore

/// A software statement issuer for tests: a key pair, its JWK Set, and statements it signs.
struct SoftwareStatementIssuer: Sendable {
    let issuer: String
    let key: SigningKey
    let kid: String

    init(_ algorithm: JWSAlgorithm = .es256, issuer: String? = nil) throws {
        self.issuer = issuer ?? "https://software.example/\(UUID().uuidString.lowercased())"
        key = try SigningKey.generate(algorithm)
        kid = "statement-\(algorithm.rawValue.lowercased())"
    }

    /// `{"keys":[…]}` with this issuer's public key.
    var jwks: String {
        let jwk = String(decoding: try! LatchkeyJSON.encode(key.publicJWK(kid: kid)), as: UTF8.self)
        return #"{"keys":[\#(jwk)]}"#
    }

    /// A policy member trusting this issuer with its keys inline, or at `jwksURI`.
    func trustEntry(jwksURI: String? = nil) -> String {
        if let jwksURI { return #"{"issuer":"\#(issuer)","jwks_uri":"\#(jwksURI)"}"# }
        return #"{"issuer":"\#(issuer)","jwks":\#(jwks)}"#
    }

    /// A tenant policy trusting `issuers` (initial access tokens and user tokens allowed).
    static func policy(trusting issuers: [String]) -> String {
        #"{"trusted_software_statement_issuers":[\#(issuers.joined(separator: ","))]}"#
    }

    /// Signs `claims` (JSON object members) plus `iss` and a valid `iat`/`exp`, unless `claims` sets them.
    func statement(_ claims: [String: Any], header: JWSHeaderParameters? = nil, signer: SigningKey? = nil) throws
        -> String
    {
        let now = Int(Date().timeIntervalSince1970)
        var all: [String: Any] = ["iss": issuer, "iat": now, "exp": now + 600]
        all.merge(claims) { $1 }
        let payload = try JSONSerialization.data(withJSONObject: all, options: [.sortedKeys])
        return try CompactJWS.sign(
            payload: payload, using: signer ?? key, header: header ?? JWSHeaderParameters(typ: "JWT", kid: kid))
    }

    /// A compact JWS with an arbitrary header and signature bytes (algorithm confusion attempts).
    static func unsigned(header: String, payload: [String: Any], signature: Data = Data()) throws -> String {
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(body) + "." + Base64URL.encode(signature)
    }
}
