import LatchkeyCore

/// The RFC 3986 §3 syntax checks of one redirect URI, on its raw characters (printable ASCII without
/// a fragment, checked before): characters, percent-encoding, the port, an empty target and dot segments.
extension RedirectURIValidator {
    struct Syntax {
        struct Problem: Error {
            let reason: String
        }

        /// The scheme, lower-cased.
        let scheme: String
        /// True when the authority holds `userinfo@`.
        let hasUserInfo: Bool

        init(_ uri: String) throws(Problem) {
            let bytes = Array(uri.utf8)
            guard bytes.allSatisfy(Self.isURICharacter) else {
                throw Problem(
                    reason:
                        #"characters outside RFC 3986 (such as ", <, >, \, ^, `, {, | or }) must be percent-encoded"#)
            }
            try Self.checkPercentEncoding(bytes)
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
                throw Problem(reason: "not an absolute URI")
            }
            scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
            let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
            var rest = bytes[(colon + 1)..<end]
            var authority: ArraySlice<UInt8> = []
            if rest.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) {
                rest = rest.dropFirst(2)
                let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
                authority = rest[..<slash]
                rest = rest[slash...]
            }
            hasUserInfo = authority.contains(UInt8(ascii: "@"))
            try Self.checkPort(of: authority)
            guard !(authority.isEmpty && rest.isEmpty) else {
                throw Problem(reason: "a redirect URI needs a path or a host after the scheme")
            }
            for segment in rest.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
                let decoded = Self.decodingDots(segment)
                guard decoded != [UInt8(ascii: ".")], decoded != [UInt8(ascii: "."), UInt8(ascii: ".")] else {
                    throw Problem(
                        reason: "a redirect URI must not contain dot segments (. or .., also percent-encoded)")
                }
            }
        }

        /// unreserved, reserved (gen-delims and sub-delims) and `%`.
        private static func isURICharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return Array("-._~:/?#[]@!$&'()*+,;=%".utf8).contains(byte)
            }
        }

        /// Every `%` starts `%HH`.
        private static func checkPercentEncoding(_ bytes: [UInt8]) throws(Problem) {
            var index = 0
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "%") {
                    guard index + 2 < bytes.count, bytes[index + 1].isASCIIHexDigit, bytes[index + 2].isASCIIHexDigit
                    else {
                        throw Problem(reason: "every % must start a percent-encoded octet (%HH)")
                    }
                    index += 3
                } else {
                    index += 1
                }
            }
        }

        /// A port, when the authority has one, is a decimal number from 1 to 65535.
        private static func checkPort(of authority: ArraySlice<UInt8>) throws(Problem) {
            var hostAndPort = authority
            if let at = authority.lastIndex(of: UInt8(ascii: "@")) { hostAndPort = authority[(at + 1)...] }
            if let bracket = hostAndPort.lastIndex(of: UInt8(ascii: "]")) {
                hostAndPort = hostAndPort[(bracket + 1)...]
            }
            guard let colon = hostAndPort.firstIndex(of: UInt8(ascii: ":")) else { return }
            let digits = hostAndPort[(colon + 1)...]
            guard (1...5).contains(digits.count),
                digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let port = Int(String(decoding: digits, as: UTF8.self)), (1...65535).contains(port)
            else { throw Problem(reason: "a port must be a number from 1 to 65535") }
        }

        /// The segment with `%2E`/`%2e` read as `.` (the only decoding that matters for dot segments).
        private static func decodingDots(_ segment: ArraySlice<UInt8>) -> [UInt8] {
            var result: [UInt8] = []
            var index = segment.startIndex
            while index < segment.endIndex {
                if segment[index] == UInt8(ascii: "%"), index + 2 < segment.endIndex,
                    segment[index + 1] == UInt8(ascii: "2"), segment[index + 2] | 0x20 == UInt8(ascii: "e")
                {
                    result.append(UInt8(ascii: "."))
                    index += 3
                } else {
                    result.append(segment[index])
                    index += 1
                }
            }
            return result
        }
    }
}
