import Crypto
import Foundation

/// RFC 7638 JWK thumbprints (SHA-256, base64url), the `jkt` of DPoP and `cnf.jkt` of bound tokens.
public enum JWKThumbprint {
    /// The canonical JSON the hash is taken over: only the required members for the key type,
    /// in lexicographic order, no whitespace (EC: crv,kty,x,y; RSA: e,kty,n; OKP: crv,kty,x).
    public static func canonicalJSON(_ jwk: JWK) throws(JOSEError) -> String {
        let members: [(String, String?)]
        switch jwk.kty {
        case "EC": members = [("crv", jwk.crv), ("kty", jwk.kty), ("x", jwk.x), ("y", jwk.y)]
        case "RSA": members = [("e", jwk.e), ("kty", jwk.kty), ("n", jwk.n)]
        case "OKP": members = [("crv", jwk.crv), ("kty", jwk.kty), ("x", jwk.x)]
        default: throw .invalidKey("no thumbprint definition for kty \(jwk.kty)")
        }
        var json = "{"
        for (index, (name, value)) in members.enumerated() {
            guard let value else { throw .invalidKey("jwk is missing required member \(name)") }
            if index > 0 { json += "," }
            json += "\"\(name)\":\"\(escape(value))\""
        }
        return json + "}"
    }

    /// base64url(SHA-256(canonical JSON)).
    public static func sha256(_ jwk: JWK) throws(JOSEError) -> String {
        let digest = SHA256.hash(data: Data(try canonicalJSON(jwk).utf8))
        return Base64URL.encode(digest)
    }

    /// JSON string escaping per RFC 8259; members are normally base64url, but inputs are untrusted.
    private static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return value
        }
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}

extension JWK {
    /// RFC 7638 SHA-256 thumbprint of this key.
    public func thumbprint() throws(JOSEError) -> String {
        try JWKThumbprint.sha256(self)
    }
}

extension JWSPublicKey {
    /// RFC 7638 SHA-256 thumbprint, built straight from the key (a validated key always has every
    /// required member, so this cannot fail). Equal to `jwk().thumbprint()`.
    public var thumbprint: String {
        let canonical: String
        switch jwk() {
        case let jwk where jwk.kty == "RSA":
            canonical = #"{"e":"\#(jwk.e ?? "")","kty":"RSA","n":"\#(jwk.n ?? "")"}"#
        case let jwk where jwk.kty == "EC":
            canonical = #"{"crv":"\#(jwk.crv ?? "")","kty":"EC","x":"\#(jwk.x ?? "")","y":"\#(jwk.y ?? "")"}"#
        case let jwk:
            canonical = #"{"crv":"\#(jwk.crv ?? "")","kty":"OKP","x":"\#(jwk.x ?? "")"}"#
        }
        return Base64URL.encode(SHA256.hash(data: Data(canonical.utf8)))
    }
}
