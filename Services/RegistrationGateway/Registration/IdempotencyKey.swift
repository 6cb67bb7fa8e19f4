import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyServer

/// The `Idempotency-Key` request header of `POST /register` (IETF httpapi idempotency-key draft).
///
/// The draft makes the field a structured-field String (`"8e03978e-…"`); the bare token form most APIs
/// accept is read too. Either way the key is 1 to 255 visible ASCII characters.
struct IdempotencyKey: Sendable, Hashable {
    static let header = HTTPField.Name("Idempotency-Key")!
    static let maximumLength = 255
    /// How long a completed key answers with its client.
    static let lifetimeSeconds = 86_400
    /// An in-flight key older than this belongs to a request that died with its process: another
    /// request may take it over instead of getting 409 until the key expires.
    static let abandonedAfterSeconds = 60

    let value: String

    /// The key sent with `request`; nil when there is none. Several headers or a malformed value are 400.
    static func from(_ request: Request) throws -> IdempotencyKey? {
        let values = request.headers[values: header]
        guard let raw = values.first else { return nil }
        guard values.count == 1 else { throw invalid("send exactly one Idempotency-Key header") }
        return try parse(raw)
    }

    static func parse(_ raw: String) throws -> IdempotencyKey {
        var text = Substring(raw.trimmingCharacters(in: .whitespaces))
        if text.first == "\"" {
            guard text.count >= 2, text.last == "\"" else { throw invalid("the quoted Idempotency-Key is not closed") }
            text = text.dropFirst().dropLast()
            // Structured-field strings escape only `"` and `\`; keys needing either are refused.
            guard !text.contains("\\"), !text.contains("\"") else {
                throw invalid("the Idempotency-Key must not contain quotes or backslashes")
            }
        }
        guard !text.isEmpty, text.utf8.count <= maximumLength else {
            throw invalid("the Idempotency-Key must be 1 to \(maximumLength) characters")
        }
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw invalid("the Idempotency-Key must be visible ASCII characters")
        }
        return IdempotencyKey(value: String(text))
    }

    private static func invalid(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_request", description)
    }
}
