import Foundation
import Hummingbird
import Logging

/// One log line per request: method, path without query, status and duration.
///
/// Headers are never logged and the query string is dropped, because `Authorization`, `DPoP`,
/// cookies and callback `code` parameters are secrets.
public struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    public let level: Logger.Level

    public init(level: Logger.Level = .info) {
        self.level = level
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        var status: Int = 500
        defer {
            let elapsed = ContinuousClock.now - start
            let ms = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
            context.logger.log(
                level: level, "request",
                metadata: [
                    "method": .string(request.method.rawValue),
                    "path": .string(request.uri.path),
                    "status": .stringConvertible(status),
                    "duration_ms": .string(String(format: "%.2f", ms)),
                ])
        }
        let response = try await next(request, context)
        status = response.status.code
        return response
    }
}
