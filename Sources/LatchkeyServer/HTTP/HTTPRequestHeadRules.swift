import LatchkeyCore
import NIOHTTP1

/// What RFC 9112 requires of a request head before a server may act on it, checked once per request
/// on NIO's parsed head (one pass over the fields, no allocation for well-formed requests).
enum HTTPRequestHeadRules {
    /// A request the server must refuse without passing it on.
    struct Refusal: Error, Equatable {
        let status: HTTPResponseStatus
        let code: String
        let description: String
    }

    /// How a valid request affects its connection.
    struct Framing: Equatable {
        /// The declared body length (`Content-Length`), nil when chunked or absent.
        var contentLength: Int?
        /// The connection must close after the answer: no keep-alive, or an upgrade request after which
        /// NIO's parser reads no further bytes.
        var closesConnection: Bool
        /// The client waits for `100 Continue` before sending its body.
        var expectsContinue: Bool
    }

    static func check(_ head: HTTPRequestHead) -> Result<Framing, Refusal> {
        // The parser treats everything after a CONNECT head as tunnel bytes: nothing more can be read.
        if head.method == .CONNECT {
            return .failure(
                Refusal(status: .notImplemented, code: "not_implemented", description: "CONNECT is not supported"))
        }
        var hosts = 0
        var validHost = true
        var transferEncoding = false
        var unknownCoding: Substring?
        var chunkedCount = 0
        var lastIsChunked = false
        var contentLength: Int?
        var connectionUpgrade = false
        var upgrade = false
        var expectsContinue = false
        for (name, value) in head.headers {
            switch name.utf8.count {
            case 4 where name.isASCIICaseInsensitiveEqual(to: "host"):
                hosts += 1
                validHost = validHost && isValidHost(value)
            case 17 where name.isASCIICaseInsensitiveEqual(to: "transfer-encoding"):
                transferEncoding = true
                value.forEachListElement { token in
                    guard !token.isEmpty else { return }  // empty list elements do not count (RFC 9110 §5.6.1)
                    lastIsChunked = token.isASCIICaseInsensitiveEqual(to: "chunked")
                    if lastIsChunked {
                        chunkedCount += 1
                    } else if unknownCoding == nil {
                        unknownCoding = token
                    }
                }
            case 14 where name.isASCIICaseInsensitiveEqual(to: "content-length"):
                contentLength = Int(value.trimmingOWS())
            case 10 where name.isASCIICaseInsensitiveEqual(to: "connection"):
                value.forEachListElement { token in
                    connectionUpgrade = connectionUpgrade || token.isASCIICaseInsensitiveEqual(to: "upgrade")
                }
            case 7 where name.isASCIICaseInsensitiveEqual(to: "upgrade"):
                upgrade = true
            case 6 where name.isASCIICaseInsensitiveEqual(to: "expect"):
                expectsContinue = value.trimmingOWS().isASCIICaseInsensitiveEqual(to: "100-continue")
            default:
                break
            }
        }
        if hosts > 1 {
            return .failure(invalid("the request has more than one Host header"))
        }
        let http11 = head.version.major > 1 || head.version.minor >= 1
        if hosts == 0, http11 {
            return .failure(invalid("an HTTP/1.1 request needs a Host header"))
        }
        if !validHost {
            return .failure(invalid("the Host header is not a valid host[:port]"))
        }
        if transferEncoding {
            // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing.
            if !http11 { return .failure(invalid("Transfer-Encoding is not allowed in HTTP/1.0")) }
            // RFC 9112 §6.3: without chunked last, the body length cannot be known.
            if chunkedCount > 0, !lastIsChunked {
                return .failure(invalid("chunked must be the final transfer coding"))
            }
            if let unknownCoding {
                let shown = String(unknownCoding.prefix(40).filter { $0.isASCII && !$0.isNewline })
                return .failure(
                    Refusal(
                        status: .notImplemented, code: "not_implemented",
                        description: "the transfer coding \(shown) is not supported"))
            }
            if chunkedCount != 1 { return .failure(invalid("Transfer-Encoding must be chunked, applied once")) }
            if contentLength != nil { return .failure(invalid("Transfer-Encoding and Content-Length together")) }
        }
        return .success(
            Framing(
                contentLength: contentLength, closesConnection: !head.isKeepAlive || (upgrade && connectionUpgrade),
                expectsContinue: expectsContinue))
    }

    private static func invalid(_ description: String) -> Refusal {
        Refusal(status: .badRequest, code: "invalid_request", description: description)
    }

    /// RFC 9112 §3.2: `uri-host [ ":" port ]` (RFC 3986): an IP literal in brackets or a reg-name of
    /// unreserved, sub-delims and percent-encoded octets; no userinfo, path or whitespace. An empty
    /// value is allowed (a target without authority).
    static func isValidHost(_ value: String) -> Bool {
        let bytes = value.utf8
        var index = bytes.startIndex
        if index != bytes.endIndex, bytes[index] == UInt8(ascii: "[") {
            index = bytes.index(after: index)
            var inside = 0
            while index != bytes.endIndex, bytes[index] != UInt8(ascii: "]") {
                let byte = bytes[index]
                guard
                    isUnreserved(byte) || isSubDelimiter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "%")
                else {
                    return false
                }
                inside += 1
                index = bytes.index(after: index)
            }
            guard index != bytes.endIndex, inside > 0 else { return false }
            index = bytes.index(after: index)
        } else {
            while index != bytes.endIndex, bytes[index] != UInt8(ascii: ":") {
                let byte = bytes[index]
                if byte == UInt8(ascii: "%") {
                    let first = bytes.index(after: index)
                    guard first != bytes.endIndex, bytes[first].isASCIIHexDigit else { return false }
                    let second = bytes.index(after: first)
                    guard second != bytes.endIndex, bytes[second].isASCIIHexDigit else { return false }
                    index = second
                } else if !isUnreserved(byte) && !isSubDelimiter(byte) {
                    return false
                }
                index = bytes.index(after: index)
            }
        }
        guard index != bytes.endIndex else { return true }
        guard bytes[index] == UInt8(ascii: ":") else { return false }
        index = bytes.index(after: index)
        var port = 0
        var digits = 0
        while index != bytes.endIndex {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 5 else { return false }
            port = port * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            index = bytes.index(after: index)
        }
        return port <= 65_535
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}

extension StringProtocol {
    /// ASCII case-insensitive comparison with a lower-case literal (header names and tokens).
    fileprivate func isASCIICaseInsensitiveEqual(to lowercase: StaticString) -> Bool {
        let other = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        guard utf8.count == other.count else { return false }
        var otherIndex = other.startIndex
        for byte in utf8 {
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard folded == other[otherIndex] else { return false }
            otherIndex += 1
        }
        return true
    }

    /// Calls `body` with each element of a comma-separated field value, without surrounding spaces
    /// (no array is built: this runs for every request).
    fileprivate func forEachListElement(_ body: (SubSequence) -> Void) {
        var start = startIndex
        while true {
            let end = self[start...].utf8.firstIndex(of: UInt8(ascii: ",")) ?? endIndex
            body(self[start..<end].trimmingOWS())
            guard end != endIndex else { return }
            start = index(after: end)
        }
    }

    /// Without leading and trailing spaces and tabs (RFC 9110 OWS).
    public func trimmingOWS() -> SubSequence {
        var start = startIndex
        var end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" { start = index(after: start) }
        while end > start, self[index(before: end)] == " " || self[index(before: end)] == "\t" {
            end = index(before: end)
        }
        return self[start..<end]
    }
}
