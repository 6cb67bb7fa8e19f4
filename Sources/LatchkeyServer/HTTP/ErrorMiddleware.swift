import Hummingbird
import LatchkeyPersistence
import Logging
import PostgresNIO

/// Turns every error into the JSON error shape every endpoint answers with (`error`, `error_description`); unknown errors become an opaque 500.
public struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as OAuthError {
            return try error.response(from: request, context: context)
        } catch let error as HTTPError {
            return OAuthError.jsonResponse(
                status: error.status, code: Self.code(for: error.status),
                description: error.body ?? error.status.reasonPhrase, extraHeaders: error.headers)
        } catch let error as HTTPRequestAborted {
            // The connection guard already answered (or closed) for a malformed or stalled request: the
            // client's mistake, not the server's, and this response is never sent.
            context.logger.debug("request aborted", metadata: ["reason": "\(error.reason)"])
            return OAuthError.jsonResponse(status: .badRequest, code: "invalid_request", description: error.reason)
        } catch let error as PasswordRejection {
            return try error.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            return OAuthError.jsonResponse(
                status: error.status, code: Self.code(for: error.status), description: error.status.reasonPhrase)
        } catch {
            // The detail stays in the log: PostgreSQL's SQLSTATE and message, else the error's type (never its
            // values, which may hold request input).
            let description = error is PSQLError ? error.logDescription : String(reflecting: type(of: error))
            context.logger.error("unhandled error", metadata: ["error": "\(description)"])
            return OAuthError.jsonResponse(
                status: .internalServerError, code: "server_error", description: "internal error")
        }
    }

    /// The error code a bare HTTP status maps to.
    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: "invalid_request"
        case 401: "invalid_token"
        case 403: "access_denied"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 413: "request_too_large"
        case 415: "unsupported_media_type"
        case 429: "too_many_requests"
        case 500...: "server_error"
        default: "invalid_request"
        }
    }
}
