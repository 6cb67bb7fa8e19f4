/// Normalises URLs for DPoP `htu` comparison (RFC 9449 §4.3 item 9, RFC 3986 §6.2.2–6.2.3).
///
/// Scheme and host are lower-cased, the default port (80 for http, 443 for https) is dropped,
/// query and fragment are removed, an empty path becomes "/", and the path is otherwise kept
/// byte for byte. Only http and https URLs with a host and no userinfo are accepted.
public enum HTUNormalizer {
    /// Why a URL cannot be used as an `htu`.
    public enum Failure: Error, Sendable, Equatable {
        case notHTTP
        case malformed(String)
    }

    /// The normalised form, or a failure for anything that is not a plain http(s) URL.
    public static func normalize(_ url: String) throws(Failure) -> String {
        // Clients send `htu` normalised already, and the sidecar builds the request URL from a configured
        // origin: returning such a URL as it is saves the copies and allocations of rebuilding it.
        var url = url
        if url.withUTF8(isNormalized) { return url }
        return try rebuild(url)
    }

    private static let httpsPrefix: [UInt8] = Array("https://".utf8)
    private static let httpPrefix: [UInt8] = Array("http://".utf8)

    /// True only when `rebuild` would return these bytes unchanged: printable ASCII, a lower-case
    /// `http://` or `https://`, a lower-case host (no IPv6 literal, no userinfo), no port or a canonical
    /// non-default one, a non-empty path, no query or fragment. Anything else takes the full path.
    static func isNormalized(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let schemeLength: Int
        if bytes.starts(with: httpsPrefix) {
            schemeLength = 8
        } else if bytes.starts(with: httpPrefix) {
            schemeLength = 7
        } else {
            return false
        }
        var index = schemeLength
        var colon: Int?
        while index < bytes.count, bytes[index] != UInt8(ascii: "/") {
            switch bytes[index] {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                break
            case UInt8(ascii: ":"):
                guard colon == nil else { return false }
                colon = index
            default:
                return false
            }
            index += 1
        }
        let authorityEnd = index
        guard authorityEnd < bytes.count else { return false }  // empty path: normalised to "/"
        let hostEnd = colon ?? authorityEnd
        guard hostEnd > schemeLength else { return false }
        if let colon {
            let digits = bytes[(colon + 1)..<authorityEnd]
            guard (1...5).contains(digits.count), digits.first != UInt8(ascii: "0") else { return false }
            var port = 0
            for digit in digits {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return false }
                port = port * 10 + Int(digit - UInt8(ascii: "0"))
            }
            guard port <= 65535, port != (schemeLength == 8 ? 443 : 80) else { return false }
        }
        while index < bytes.count {
            let byte = bytes[index]
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "?"), byte != UInt8(ascii: "#") else { return false }
            index += 1
        }
        return true
    }

    /// The full normalisation.
    static func rebuild(_ url: String) throws(Failure) -> String {
        let bytes = Array(url.utf8)
        // Control characters and spaces never appear in a valid URL; refusing them avoids
        // two different strings normalising to the same value.
        guard !bytes.isEmpty, !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw .malformed("empty URL or whitespace/control characters")
        }
        guard let schemeEnd = indexOf(Array("://".utf8), in: bytes) else { throw .malformed("missing scheme") }
        let scheme = String(decoding: bytes[..<schemeEnd].map(lowercased), as: UTF8.self)
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: throw .notHTTP
        }

        let authorityStart = schemeEnd + 3
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count, !isAuthorityTerminator(bytes[authorityEnd]) { authorityEnd += 1 }
        var pathEnd = authorityEnd
        while pathEnd < bytes.count, bytes[pathEnd] != UInt8(ascii: "?"), bytes[pathEnd] != UInt8(ascii: "#") {
            pathEnd += 1
        }

        let authority = bytes[authorityStart..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw .malformed("userinfo is not allowed") }

        let hostBytes: ArraySlice<UInt8>
        let portBytes: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                throw .malformed("unterminated IPv6 literal")
            }
            hostBytes = authority[authority.startIndex...close]
            let rest = authority[(close + 1)...]
            if rest.isEmpty {
                portBytes = nil
            } else {
                guard rest.first == UInt8(ascii: ":") else { throw .malformed("junk after IPv6 literal") }
                portBytes = rest.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<colon]
            portBytes = authority[(colon + 1)...]
        } else {
            hostBytes = authority
            portBytes = nil
        }
        guard !hostBytes.isEmpty else { throw .malformed("missing host") }
        guard !hostBytes.contains(UInt8(ascii: ":")) || hostBytes.first == UInt8(ascii: "[") else {
            throw .malformed("invalid host")
        }

        var port: Int?
        if let portBytes, !portBytes.isEmpty {
            // An empty port ("host:") means the default (RFC 3986 §6.2.3).
            guard portBytes.count <= 5, portBytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), value <= 65535
            else {
                throw .malformed("invalid port")
            }
            port = value == defaultPort ? nil : value
        }

        var result = scheme + "://" + String(decoding: hostBytes.map(lowercased), as: UTF8.self)
        if let port { result += ":\(port)" }
        let path = bytes[authorityEnd..<pathEnd]
        result += path.isEmpty ? "/" : String(decoding: path, as: UTF8.self)
        return result
    }

    private static func isAuthorityTerminator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    private static func indexOf(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
