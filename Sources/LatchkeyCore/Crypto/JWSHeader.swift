import Foundation

/// The protected header of a compact JWS, with the registered parameters typed and the
/// decoded JSON kept for anything else.
public struct JWSHeader: Sendable {
    /// The `alg` exactly as sent; use `algorithm` for the implemented subset.
    public let alg: String
    public let typ: String?
    public let kid: String?
    public let cty: String?
    /// Embedded public key (DPoP proofs); private members are recorded, never kept.
    public let jwk: JWK?
    public let crit: [String]?
    /// The decoded header JSON bytes (what was signed, after base64url decoding).
    public let rawJSON: Data

    /// `alg` parsed case-sensitively; `nil` for `none`, `HS256` and anything else not implemented.
    public var algorithm: JWSAlgorithm? { JWSAlgorithm(rawValue: alg) }

    /// The header as a JSON dictionary, for parameters without a typed property (converted on demand,
    /// so the common path never pays for it).
    public func jsonObject() throws(JOSEError) -> [String: Any] {
        try JOSEJSON.parse(rawJSON, what: "header")
    }
}

/// The parts of the header that are typed, read from the members ``StrictJSONParser`` produced; wrong JSON
/// types (e.g. numeric `alg`) are refused, `null` for an optional parameter means absent.
struct DecodedHeaderFields {
    let alg: String
    let typ: String?
    let kid: String?
    let cty: String?
    let jwk: JWK?
    let crit: [String]?

    init(_ members: [String: JSONValue]) throws(JOSEError) {
        switch members["alg"] {
        case .string(let value)?: alg = value
        case nil, .null?: throw .malformed("JWS header: missing alg")
        case _?: throw .malformed("JWS header: wrong type for alg")
        }
        typ = try JOSEJSON.optionalString(members, "typ", in: "JWS header")
        kid = try JOSEJSON.optionalString(members, "kid", in: "JWS header")
        cty = try JOSEJSON.optionalString(members, "cty", in: "JWS header")
        switch members["jwk"] {
        case nil, .null?: jwk = nil
        case .object(let key)?: jwk = try JWK(members: key)
        case _?: throw .malformed("JWS header: wrong type for jwk")
        }
        switch members["crit"] {
        case nil, .null?: crit = nil
        case .array(let names)?:
            var strings: [String] = []
            for name in names {
                guard case .string(let text) = name else { throw .malformed("JWS header: wrong type for crit") }
                strings.append(text)
            }
            crit = strings
        case _?: throw .malformed("JWS header: wrong type for crit")
        }
    }
}

/// Extra protected-header parameters for signing (`alg` always comes from the key).
public struct JWSHeaderParameters: Sendable, Hashable {
    public var typ: String?
    public var kid: String?
    public var cty: String?
    /// Embeds this public key in the header (DPoP proofs).
    public var jwk: JWK?

    public init(typ: String? = nil, kid: String? = nil, cty: String? = nil, jwk: JWK? = nil) {
        self.typ = typ
        self.kid = kid
        self.cty = cty
        self.jwk = jwk
    }
}

/// The header as written when signing (keys come out sorted, so `alg` leads).
struct EncodedHeader: Encodable {
    let alg: String
    let typ: String?
    let kid: String?
    let cty: String?
    let jwk: JWK?
}

extension EncodedHeader: CompactJSONObject {
    func writeMembers(to object: inout CompactJSONObjectWriter) {
        object.member("alg", alg)
        object.member("cty", cty)
        object.member("jwk", encoding: jwk)
        object.member("kid", kid)
        object.member("typ", typ)
    }
}
