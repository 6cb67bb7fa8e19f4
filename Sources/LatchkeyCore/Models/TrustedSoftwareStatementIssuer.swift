import Foundation

/// An issuer whose signed software statements (RFC 7591 §2.3) a tenant accepts, with its keys.
public struct TrustedSoftwareStatementIssuer: Codable, Sendable, Hashable {
    /// Where the issuer's public keys come from: exactly one of an inline JWK Set or a URI.
    public enum Keys: Sendable, Hashable {
        case jwks(JSONValue)
        case jwksURI(String)
    }

    /// The `iss` claim a statement must carry.
    public var issuer: String
    public var keys: Keys

    public init(issuer: String, keys: Keys) {
        self.issuer = issuer
        self.keys = keys
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case issuer
        case jwks
        case jwksURI = "jwks_uri"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        issuer = try container.decode(String.self, forKey: .issuer)
        let jwks = try container.decodeIfPresent(JSONValue.self, forKey: .jwks)
        let jwksURI = try container.decodeIfPresent(String.self, forKey: .jwksURI)
        switch (jwks, jwksURI) {
        case (let set?, nil): keys = .jwks(set)
        case (nil, let uri?): keys = .jwksURI(uri)
        default:
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: container.codingPath,
                    debugDescription: "a trusted software statement issuer needs exactly one of jwks or jwks_uri"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(issuer, forKey: .issuer)
        switch keys {
        case .jwks(let set): try container.encode(set, forKey: .jwks)
        case .jwksURI(let uri): try container.encode(uri, forKey: .jwksURI)
        }
    }
}
