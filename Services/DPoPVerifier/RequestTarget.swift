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
              raw.utf8.allSatisfy(Self.isAllowed) else { return nil }
        self.raw = raw
    }

    /// The path, without query.
    var path: Substring {
        raw.firstIndex(of: "?").map { raw[..<$0] } ?? raw[...]
    }

    /// RFC 3986 unreserved, sub-delims, ":", "@", "/", "?" and "%" (fragments are never sent).
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?%".utf8.contains(byte)
        }
    }
}
