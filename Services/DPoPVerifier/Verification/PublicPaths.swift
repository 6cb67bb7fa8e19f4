import Foundation
import LatchkeyCore

/// Paths the sidecar forwards without authentication (e.g. `/health`): exact paths, or prefixes
/// written `/public/*`. Only canonical paths can match, so `/public/../admin` or `/public%2F..`
/// still need a token: what the upstream would resolve them to is not what the list allowed.
struct PublicPaths: Sendable {
    private let exact: Set<String>
    private let prefixes: [String]

    static let none = PublicPaths(exact: [], prefixes: [])

    private init(exact: Set<String>, prefixes: [String]) {
        self.exact = exact
        self.prefixes = prefixes
    }

    init(_ values: [String]) throws {
        var exact: Set<String> = []
        var prefixes: [String] = []
        for value in values {
            guard value.hasPrefix("/"), Self.isCanonical(value.hasSuffix("/*") ? String(value.dropLast()) : value)
            else {
                throw ConfigurationError(
                    "DPOP_PUBLIC_PATHS: \(value) must be an absolute path like /health or /public/*")
            }
            if value.hasSuffix("/*") { prefixes.append(String(value.dropLast())) } else { exact.insert(value) }
        }
        self.exact = exact
        self.prefixes = prefixes
    }

    var isEmpty: Bool { exact.isEmpty && prefixes.isEmpty }

    /// True when `path` (without query) is on the list.
    func contains(_ path: Substring) -> Bool {
        guard !isEmpty else { return false }
        guard exact.contains(String(path)) || prefixes.contains(where: { path.hasPrefix($0) }) else { return false }
        return Self.isCanonical(path)
    }

    /// No dot segments, empty segments, backslashes, or percent-encoded dots, slashes and backslashes; no
    /// `;` (Java servers treat `/public/..;/admin` as `/admin`) and no `%u` escapes (IIS reads `%u002e` as `.`).
    static func isCanonical<S: StringProtocol>(_ path: S) -> Bool {
        let bytes = Array(path.utf8)
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: ";") { return false }
            if byte == UInt8(ascii: "%"), index + 1 < bytes.count, bytes[index + 1] | 0x20 == UInt8(ascii: "u") {
                return false
            }
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count {
                let escaped = (bytes[index + 1], bytes[index + 2] | 0x20)  // hex digits in either case
                if escaped == (UInt8(ascii: "2"), UInt8(ascii: "e"))
                    || escaped == (UInt8(ascii: "2"), UInt8(ascii: "f"))
                    || escaped == (UInt8(ascii: "5"), UInt8(ascii: "c"))
                {
                    return false
                }
            }
        }
        let segments = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        func isDotSegment(_ segment: ArraySlice<UInt8>) -> Bool {
            segment.elementsEqual([UInt8(ascii: ".")]) || segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
        }
        return !segments.dropLast().contains { $0.isEmpty || isDotSegment($0) }
            && !(segments.last.map(isDotSegment) ?? false)
    }
}
