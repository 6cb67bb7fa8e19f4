import Hummingbird

/// Refuses bodies over the limit with 413 before any handler reads them, then buffers the rest.
public struct BodyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    public let limit: Int

    public init(limit: Int = HTTPLimits.maximumBodySize) {
        self.limit = limit
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw OAuthError(.contentTooLarge, "request_too_large", "request body exceeds \(limit) bytes")
        }
        var request = request
        do {
            _ = try await request.collectBody(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw OAuthError(.contentTooLarge, "request_too_large", "request body exceeds \(limit) bytes")
        }
        return try await next(request, context)
    }
}
