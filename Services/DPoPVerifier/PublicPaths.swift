import Foundation
import Shared

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
            guard value.hasPrefix("/"), Self.isCanonical(value.hasSuffix("/*") ? String(value.dropLast()) : value) else {
                throw ConfigurationError("DPOP_PUBLIC_PATHS: \(value) must be an absolute path like /health or /public/*")
            }
            if value.hasSuffix("/*") { prefixes.append(String(value.dropLast())) } else { exact.insert(value) }
        }
        self.exact = exact
        self.prefixes = prefixes
    }

    var isEmpty: Bool { exact.isEmpty && prefixes.isEmpty }

    /// True when `path` (without query) is on the list.
    func contains(_ path: Substring) -> Bool {
        guard !isEmpty, Self.isCanonical(path) else { return false }
        if exact.contains(String(path)) { return true }
        return prefixes.contains { path.hasPrefix($0) }
    }

    /// No dot segments, empty segments, backslashes, or percent-encoded dots and slashes.
    static func isCanonical<S: StringProtocol>(_ path: S) -> Bool {
        let lowered = path.lowercased()
        if lowered.contains("%2e") || lowered.contains("%2f") || lowered.contains("%5c") || lowered.contains("\\") { return false }
        let segments = lowered.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        return !segments.dropLast().contains { $0.isEmpty || $0 == "." || $0 == ".." }
            && segments.last.map { $0 != "." && $0 != ".." } ?? true
    }
}
