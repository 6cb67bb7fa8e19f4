import HTTPTypes

/// The access token of a request and the scheme it came with (RFC 9449 §7.1, RFC 6750 §2.1).
struct AuthorizationCredentials: Sendable {
    enum Scheme: Sendable {
        case dpop, bearer
    }

    /// Why the `Authorization` header could not be used.
    enum Problem: Error, Equatable {
        /// No `Authorization` header, or one with a scheme we do not speak: answered with a bare challenge.
        case missing
        /// Several headers, or a DPoP/Bearer header whose token is not token68: 400 `invalid_request`.
        case malformed(String)
    }

    /// Longest accepted access token, in bytes.
    static let maximumTokenLength = 8 * 1024

    let scheme: Scheme
    let token: String

    init(headers: some RequestHeaderFields) throws(Problem) {
        let values = headers.values(.authorization)
        guard !values.isEmpty else { throw .missing }
        guard values.count == 1 else { throw .malformed("more than one Authorization header") }
        let value = values[0]
        guard let space = value.firstIndex(of: " ") else { throw .missing }
        switch value[..<space].lowercased() {
        case "dpop": scheme = .dpop
        case "bearer": scheme = .bearer
        default: throw .missing
        }
        let token = value[space...].drop(while: { $0 == " " })
        guard !token.isEmpty else { throw .malformed("the Authorization header has no token") }
        guard token.utf8.count <= Self.maximumTokenLength else {
            throw .malformed("the access token exceeds \(Self.maximumTokenLength) bytes")
        }
        guard Self.isToken68(token) else { throw .malformed("the access token is not token68") }
        self.token = String(token)
    }

    /// RFC 7235 token68: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isToken68(_ token: Substring) -> Bool {
        // Access tokens are long: scan contiguous bytes rather than step a Substring's UTF-8 view.
        token.utf8.withContiguousStorageIfAvailable(isToken68) ?? isToken68(Array(token.utf8))
    }

    private static func isToken68<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var sawPadding = false
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "="):
                sawPadding = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
                UInt8(ascii: "/"):
                if sawPadding { return false }
            default:
                return false
            }
        }
        return bytes.first != UInt8(ascii: "=")
    }
}
