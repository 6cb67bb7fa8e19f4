/// The typed proof claims; wrong JSON types (e.g. `iat` as a string) are refused.
struct DPoPProofClaims: Codable {
    let jti: String
    let htm: String
    let htu: String
    let iat: Int64
    let ath: String?
    let nonce: String?
}

extension DPoPProofClaims {
    /// Deepest nesting accepted in a proof payload (the claims themselves are flat; extensions may nest a little).
    static let maximumDepth = 16

    /// Reads the claims from the decoded payload with the strict parser (no `JSONDecoder` on the
    /// hot path): duplicate members, nesting beyond `maximumDepth` and invalid JSON are refused;
    /// other members are ignored; `null` for an optional claim means absent.
    init(json bytes: [UInt8]) throws(JOSEError) {
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(bytes, maximumDepth: Self.maximumDepth)
        } catch {
            throw .malformed("JWS payload: \(error.reason)")
        }
        guard case .object(let members) = value else { throw .malformed("JWS payload is not a JSON object") }
        jti = try Self.string(members, "jti")
        htm = try Self.string(members, "htm")
        htu = try Self.string(members, "htu")
        guard let number = members["iat"] else { throw .malformed("JWS payload: missing iat") }
        // Integral and representable: 1.5 or "1" are refused, as a typed Int64 decode would.
        guard case .number(let seconds) = number, let iat = Int64(exactly: seconds) else {
            throw .malformed("JWS payload: wrong type for iat")
        }
        self.iat = iat
        ath = try Self.optionalString(members, "ath")
        nonce = try Self.optionalString(members, "nonce")
    }

    private static func string(_ members: [String: JSONValue], _ name: String) throws(JOSEError) -> String {
        guard let value = members[name] else { throw .malformed("JWS payload: missing \(name)") }
        guard case .string(let string) = value else { throw .malformed("JWS payload: wrong type for \(name)") }
        return string
    }

    private static func optionalString(_ members: [String: JSONValue], _ name: String) throws(JOSEError) -> String? {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let string)?: return string
        default: throw .malformed("JWS payload: wrong type for \(name)")
        }
    }
}
