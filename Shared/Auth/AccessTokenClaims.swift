/// The claims of an RFC 9068 JWT access token; wrong JSON types fail decoding.
struct AccessTokenClaims: Decodable {
    let iss: String
    let sub: String
    let aud: [String]
    let exp: Int64
    let nbf: Int64?
    let iat: Int64
    let jti: String
    let clientID: String
    let scope: String?
    let cnf: Confirmation?

    /// RFC 7800 confirmation; only `jkt` (RFC 9449 §6) is understood.
    struct Confirmation: Decodable {
        let jkt: String?
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, nbf, iat, jti, scope, cnf
        case clientID = "client_id"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decode(String.self, forKey: .iss)
        sub = try c.decode(String.self, forKey: .sub)
        // RFC 7519 §4.1.3: a single string or an array of strings.
        if let single = try? c.decode(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try c.decode([String].self, forKey: .aud)
        }
        exp = try Self.numericDate(c, .exp)
        nbf = c.contains(.nbf) ? try Self.numericDate(c, .nbf) : nil
        iat = try Self.numericDate(c, .iat)
        jti = try c.decode(String.self, forKey: .jti)
        clientID = try c.decode(String.self, forKey: .clientID)
        scope = try c.decodeIfPresent(String.self, forKey: .scope)
        cnf = try c.decodeIfPresent(Confirmation.self, forKey: .cnf)
    }

    /// RFC 7519 NumericDate: a JSON number of seconds, possibly fractional; truncated to whole seconds.
    private static func numericDate(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Int64 {
        if let whole = try? c.decode(Int64.self, forKey: key) { return whole }
        let value = try c.decode(Double.self, forKey: key)
        guard value.isFinite, value > -9.0e15, value < 9.0e15 else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "out of range")
        }
        return Int64(value.rounded(.down))
    }
}
