import Foundation
import LatchkeyCore

/// Claims of a Latchkey access token (RFC 9068 JWT profile, `typ: at+jwt`); wrong JSON types fail decoding.
public struct AccessTokenClaims: Codable, Sendable, Equatable {
    /// RFC 7800 confirmation: the RFC 7638 thumbprint of the DPoP key the token is bound to (RFC 9449 §6).
    public struct Confirmation: Codable, Sendable, Equatable {
        /// Nil when the token is confirmed by another method (e.g. mTLS), which Latchkey cannot check.
        public var jkt: String?
        public init(jkt: String?) { self.jkt = jkt }
    }

    public var iss: String
    public var sub: String
    public var aud: Audience
    public var clientID: String
    /// Space-separated scopes; absent in some third-party tokens.
    public var scope: String?
    public var jti: String
    public var iat: Int64
    public var exp: Int64
    public var nbf: Int64?
    public var cnf: Confirmation?

    public init(
        iss: String, sub: String, aud: Audience, clientID: String, scope: String?, jti: String,
        iat: Int64, exp: Int64, nbf: Int64? = nil, cnf: Confirmation? = nil
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.clientID = clientID
        self.scope = scope
        self.jti = jti
        self.iat = iat
        self.exp = exp
        self.nbf = nbf
        self.cnf = cnf
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, scope, jti, iat, exp, nbf, cnf
        case clientID = "client_id"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decode(String.self, forKey: .iss)
        sub = try c.decode(String.self, forKey: .sub)
        aud = try c.decode(Audience.self, forKey: .aud)
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

    /// The granted scopes as a set.
    public var scopes: Set<String> { Set((scope ?? "").split(separator: " ").map(String.init)) }
}

/// The `aud` claim: one string or an array of strings (RFC 7519 §4.1.3).
public struct Audience: Codable, Sendable, Equatable {
    public var values: [String]

    public init(_ values: [String]) { self.values = values }
    public init(_ value: String) { self.values = [value] }

    public func contains(_ audience: String) -> Bool { values.contains(audience) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let single = try? container.decode(String.self) {
            values = [single]
        } else {
            values = try container.decode([String].self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if values.count == 1 { try container.encode(values[0]) } else { try container.encode(values) }
    }
}

extension AccessTokenClaims: CompactJSONObject {
    public func writeMembers(to object: inout CompactJSONObjectWriter) {
        if aud.values.count == 1 { object.member("aud", aud.values[0]) } else { object.member("aud", aud.values) }
        object.member("client_id", clientID)
        object.member("cnf", object: cnf)
        object.member("exp", exp)
        object.member("iat", iat)
        object.member("iss", iss)
        object.member("jti", jti)
        object.member("nbf", nbf)
        object.member("scope", scope)
        object.member("sub", sub)
    }
}

extension AccessTokenClaims.Confirmation: CompactJSONObject {
    public func writeMembers(to object: inout CompactJSONObjectWriter) {
        object.member("jkt", jkt)
    }
}
