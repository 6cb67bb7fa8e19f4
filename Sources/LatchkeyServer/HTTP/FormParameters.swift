import Foundation
import HTTPTypes
import Hummingbird

/// An `application/x-www-form-urlencoded` body where every parameter appears at most once (RFC 6749 §3.2).
public struct FormParameters: Sendable {
    public private(set) var values: [String: String]

    public subscript(_ name: String) -> String? { values[name] }

    /// Parses the request body; wrong content type → 415, malformed encoding or repeats → `invalid_request`.
    public static func read(from request: Request) async throws -> FormParameters {
        let type = request.headers[.contentType]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else {
            throw OAuthError(
                .unsupportedMediaType, "invalid_request", "content type must be application/x-www-form-urlencoded")
        }
        var request = request
        let buffer = try await request.collectBody(upTo: HTTPLimits.maximumBodySize)
        return try parse(String(buffer: buffer))
    }

    public static func parse(_ body: String) throws(OAuthError) -> FormParameters {
        var values: [String: String] = [:]
        var seen: Set<String> = []
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else {
                throw OAuthError.invalidRequest("malformed form encoding")
            }
            guard !name.isEmpty else { throw OAuthError.invalidRequest("malformed form encoding") }
            // No legitimate parameter holds NUL, and PostgreSQL text cannot store it (it would fail as a 500).
            guard !name.contains("\0"), !value.contains("\0") else {
                throw OAuthError.invalidRequest("parameters must not contain NUL characters")
            }
            // RFC 6749 §3.2: parameters must not be included more than once.
            guard seen.insert(name).inserted else {
                throw OAuthError.invalidRequest("parameter \(safeName(name)) is repeated")
            }
            // Empty values are treated as omitted (RFC 6749 §3.1).
            if !value.isEmpty { values[name] = value }
        }
        return FormParameters(values: values)
    }

    private static func decode(_ part: Substring) -> String? {
        part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// A parameter name short and printable enough to echo in an error description.
    public static func safeName(_ name: String) -> String {
        let printable = name.unicodeScalars.allSatisfy {
            $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f && $0 != "\""
        }
        return printable && name.count <= 40 ? "\"\(name)\"" : "(unprintable)"
    }
}
