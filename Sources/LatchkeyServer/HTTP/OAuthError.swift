import Foundation
import Hummingbird

/// An error answered as `{"error": …, "error_description": …}` with the status the RFC names.
public struct OAuthError: HTTPResponseError, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var errorDescription: String
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ description: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.errorDescription = description
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(errorDescription)" }

    public static func invalidRequest(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_request", description)
    }

    public static func notFound(_ description: String) -> OAuthError {
        OAuthError(.notFound, "not_found", description)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Self.jsonResponse(status: status, code: code, description: errorDescription, extraHeaders: headers)
    }

    /// Builds the JSON error body; errors may follow a token request, so they are never cached.
    public static func jsonResponse(
        status: HTTPResponse.Status, code: String, description: String, extraHeaders: HTTPFields = [:]
    ) -> Response {
        let parts = jsonParts(status: status, code: code, description: description, extraHeaders: extraHeaders)
        return Response(
            status: parts.head.status, headers: parts.head.headerFields, body: .init(byteBuffer: parts.body))
    }

    /// This error as a response head and JSON body, for handlers that write below the router.
    public var jsonParts: (head: HTTPResponse, body: ByteBuffer) {
        Self.jsonParts(status: status, code: code, description: errorDescription, extraHeaders: headers)
    }

    static func jsonParts(
        status: HTTPResponse.Status, code: String, description: String,
        extraHeaders: HTTPFields
    ) -> (head: HTTPResponse, body: ByteBuffer) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(Body(error: code, errorDescription: description))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        headers.append(contentsOf: extraHeaders)
        return (HTTPResponse(status: status, headerFields: headers), ByteBuffer(bytes: data))
    }

    /// The RFC 6749 §5.2 error body.
    private struct Body: Encodable {
        var error: String
        var errorDescription: String

        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }
}
