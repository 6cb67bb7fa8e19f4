/// The origin-form request target (`/path?query`) exactly as the client sent it.
///
/// It is forwarded byte for byte (percent-encoding intact) and its path, without the query, is what
/// `htu` is compared with. Absolute-form targets (`GET http://other/…`) and bytes outside RFC 3986
/// are refused, so neither the proof check nor the upstream ever sees an authority the client chose.
struct RequestTarget: Sendable, Equatable {
    /// Longest accepted target, in bytes.
    static let maximumLength = 8 * 1024

    let raw: String

    init?(_ raw: String) {
        guard raw.utf8.first == UInt8(ascii: "/"), raw.utf8.count <= Self.maximumLength,
            raw.utf8.allSatisfy(Self.isAllowed)
        else { return nil }
        self.raw = raw
    }

    /// RFC 9112 §3.2.2: a server must accept the absolute form (`http://host/path?query`). Its
    /// authority only selects among the configured origins, as `Host` would (§3.2.2 says it replaces
    /// `Host`); the rest is the origin-form target. Nil when `raw` is not an http(s) absolute form.
    static func absoluteForm(_ raw: String) -> (authority: String, target: String)? {
        let lowered = raw.prefix(8).lowercased()
        let schemeLength = lowered.hasPrefix("http://") ? 7 : lowered.hasPrefix("https://") ? 8 : 0
        guard schemeLength > 0 else { return nil }
        let rest = raw.dropFirst(schemeLength)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<end]
        guard !authority.isEmpty else { return nil }
        let remainder = rest[end...]
        let target = remainder.first == "/" ? String(remainder) : "/" + remainder
        return (String(authority), target)
    }

    /// The path, without query.
    var path: Substring {
        raw.firstIndex(of: "?").map { raw[..<$0] } ?? raw[...]
    }

    /// RFC 3986 unreserved, sub-delims, ":", "@", "/", "?" and "%" (fragments are never sent).
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?%".utf8.contains(byte)
        }
    }
}
