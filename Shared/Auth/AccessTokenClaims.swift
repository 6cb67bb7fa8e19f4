import Foundation

/// Claims of a Latchkey access token (RFC 9068 JWT profile, `typ: at+jwt`).
public struct AccessTokenClaims: Codable, Sendable, Equatable {
    /// RFC 7800 confirmation: the RFC 7638 thumbprint of the DPoP key the token is bound to.
    public struct Confirmation: Codable, Sendable, Equatable {
        public var jkt: String
        public init(jkt: String) { self.jkt = jkt }
    }

    public var iss: String
    public var sub: String
    public var aud: Audience
    public var clientID: String
    public var scope: String
    public var jti: String
    public var iat: Int64
    public var exp: Int64
    public var nbf: Int64?
    public var cnf: Confirmation?

    public init(
        iss: String, sub: String, aud: Audience, clientID: String, scope: String, jti: String,
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

    /// The granted scopes as a set.
    public var scopes: Set<String> { Set(scope.split(separator: " ").map(String.init)) }
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
