import Foundation

/// A JSON Web Key (RFC 7517) for the asymmetric signing key types Latchkey accepts:
/// EC P-256/P-384, RSA and OKP Ed25519.
///
/// Private members are never kept: decoding only records *that* they were present
/// (`hasPrivateMembers`), so a `JWK` value can always be serialised for output safely.
public struct JWK: Codable, Sendable, Hashable {
    /// Key type: "EC", "RSA", "OKP" (anything else decodes but cannot be used).
    public var kty: String
    /// Curve for EC ("P-256", "P-384") and OKP ("Ed25519") keys.
    public var crv: String?
    /// base64url x coordinate (EC) or public key (OKP).
    public var x: String?
    /// base64url y coordinate (EC).
    public var y: String?
    /// base64url RSA modulus.
    public var n: String?
    /// base64url RSA public exponent.
    public var e: String?
    public var kid: String?
    public var use: String?
    public var alg: String?
    /// Names of private members found when decoding (values are discarded on purpose).
    public private(set) var privateMemberNames: [String]

    /// Members that carry private or symmetric key material in RFC 7517/7518.
    public static let privateMemberKeys: [String] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    public init(
        kty: String, crv: String? = nil, x: String? = nil, y: String? = nil, n: String? = nil,
        e: String? = nil, kid: String? = nil, use: String? = nil, alg: String? = nil
    ) {
        self.kty = kty
        self.crv = crv
        self.x = x
        self.y = y
        self.n = n
        self.e = e
        self.kid = kid
        self.use = use
        self.alg = alg
        self.privateMemberNames = []
    }

    /// True when the JSON this key came from contained private key material.
    public var hasPrivateMembers: Bool { !privateMemberNames.isEmpty }

    /// The same key with only public members, suitable for JWKS documents and logs.
    public var publicJWK: JWK {
        var copy = self
        copy.privateMemberNames = []
        return copy
    }

    private enum CodingKeys: String, CodingKey {
        case kty, crv, x, y, n, e, kid, use, alg
        case d, p, q, dp, dq, qi, oth, k
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kty = try container.decode(String.self, forKey: .kty)
        crv = try container.decodeIfPresent(String.self, forKey: .crv)
        x = try container.decodeIfPresent(String.self, forKey: .x)
        y = try container.decodeIfPresent(String.self, forKey: .y)
        n = try container.decodeIfPresent(String.self, forKey: .n)
        e = try container.decodeIfPresent(String.self, forKey: .e)
        kid = try container.decodeIfPresent(String.self, forKey: .kid)
        use = try container.decodeIfPresent(String.self, forKey: .use)
        alg = try container.decodeIfPresent(String.self, forKey: .alg)
        let privateKeys: [CodingKeys] = [.d, .p, .q, .dp, .dq, .qi, .oth, .k]
        // Presence alone disqualifies the key, whatever the member's JSON type (even null).
        privateMemberNames = privateKeys.filter { container.contains($0) }.map(\.rawValue)
    }

    /// A key from members read by ``StrictJSONParser`` (an embedded `jwk` header), under the rules of
    /// `init(from:)`: `kty` required, the other known members strings when present (`null` means absent),
    /// private members recorded by name only.
    init(members: [String: JSONValue]) throws(JOSEError) {
        guard case .string(let kty)? = members["kty"] else {
            throw .malformed("JWS header: missing or mistyped jwk.kty")
        }
        self.kty = kty
        crv = try JOSEJSON.optionalString(members, "crv", in: "JWS header jwk")
        x = try JOSEJSON.optionalString(members, "x", in: "JWS header jwk")
        y = try JOSEJSON.optionalString(members, "y", in: "JWS header jwk")
        n = try JOSEJSON.optionalString(members, "n", in: "JWS header jwk")
        e = try JOSEJSON.optionalString(members, "e", in: "JWS header jwk")
        kid = try JOSEJSON.optionalString(members, "kid", in: "JWS header jwk")
        use = try JOSEJSON.optionalString(members, "use", in: "JWS header jwk")
        alg = try JOSEJSON.optionalString(members, "alg", in: "JWS header jwk")
        // Presence alone disqualifies the key, whatever the member's JSON type (even null).
        privateMemberNames = Self.privateMemberKeys.filter { members[$0] != nil }
    }

    /// Emits public members only, whatever was decoded.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kty, forKey: .kty)
        try container.encodeIfPresent(crv, forKey: .crv)
        try container.encodeIfPresent(x, forKey: .x)
        try container.encodeIfPresent(y, forKey: .y)
        try container.encodeIfPresent(n, forKey: .n)
        try container.encodeIfPresent(e, forKey: .e)
        try container.encodeIfPresent(kid, forKey: .kid)
        try container.encodeIfPresent(use, forKey: .use)
        try container.encodeIfPresent(alg, forKey: .alg)
    }

    /// Builds the swift-crypto public key this JWK describes, with all size and curve checks.
    public func verificationKey() throws(JOSEError) -> JWSPublicKey {
        try JWSPublicKey(jwk: self)
    }
}

/// A JWK Set document (RFC 7517 §5), as served at a JWKS endpoint.
public struct JWKSet: Codable, Sendable, Hashable {
    public var keys: [JWK]

    public init(keys: [JWK]) {
        self.keys = keys
    }

    /// The key with this `kid`, if exactly one matches (ambiguous sets are not guessed at).
    public func key(withID kid: String) -> JWK? {
        let matches = keys.filter { $0.kid == kid }
        return matches.count == 1 ? matches[0] : nil
    }
}
