import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import Logging

/// Propagates a sane incoming `X-Request-Id` or makes one, and echoes it on the response.
public struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    public static var headerName: HTTPField.Name { RequestIDs.headerName }

    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let incoming = request.headers[Self.headerName]
        let id = incoming.flatMap { Self.isAcceptable($0) ? $0 : nil } ?? RandomUUID.string()
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        var response = try await next(request, context)
        response.headers[Self.headerName] = id
        return response
    }

    /// Only short, plain ids are echoed, so the header cannot carry log or header injection.
    public static func isAcceptable(_ value: String) -> Bool {
        (1...64).contains(value.utf8.count)
            && value.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
            }
    }
}
