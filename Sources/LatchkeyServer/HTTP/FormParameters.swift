import Foundation
import HTTPTypes
import Hummingbird

/// An `application/x-www-form-urlencoded` body where every parameter appears at most once (RFC 6749 §3.2).
public struct FormParameters: Sendable {
    public private(set) var values: [String: String]

    public subscript(_ name: String) -> String? { values[name] }

    /// Parses the request body; wrong content type → 415, malformed encoding or repeats → `invalid_request`.
    public static func read(from request: Request) async throws -> FormParameters {
        guard isFormMediaType(request.headers[.contentType]) else {
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
            guard !name.utf8.contains(0), !value.utf8.contains(0) else {
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

    /// Whether a `Content-Type` value names `application/x-www-form-urlencoded`, with or without parameters
    /// (`; charset=UTF-8`): the media type before the first `;`, without the spaces and tabs around it,
    /// compared case-insensitively (RFC 9110 §8.3.1). Byte by byte: this runs on every token request.
    public static func isFormMediaType(_ value: String?) -> Bool {
        guard var utf8 = value?.utf8[...] else { return false }
        if let semicolon = utf8.firstIndex(of: UInt8(ascii: ";")) { utf8 = utf8[..<semicolon] }
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = utf8.first, isSpace(first) { utf8 = utf8.dropFirst() }
        while let last = utf8.last, isSpace(last) { utf8 = utf8.dropLast() }
        return utf8.elementsEqual(formMediaType) { byte, expected in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == expected : byte == expected
        }
    }

    private static let formMediaType = Array("application/x-www-form-urlencoded".utf8)

    /// `+` as a space and `%XX` as the byte XX; nil when a `%` is not followed by two hex digits or the
    /// bytes are not UTF-8 (as Foundation's `removingPercentEncoding`, without bridging to NSString).
    public static func decode(_ part: Substring) -> String? {
        var utf8 = part.utf8
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return String(part) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        while let byte = utf8.popFirst() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = utf8.popFirst().flatMap(hexValue), let low = utf8.popFirst().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A parameter name short and printable enough to echo in an error description.
    public static func safeName(_ name: String) -> String {
        let printable = name.unicodeScalars.allSatisfy {
            $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f && $0 != "\""
        }
        return printable && name.count <= 40 ? "\"\(name)\"" : "(unprintable)"
    }
}
