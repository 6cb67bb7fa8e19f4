import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// CORS for the registration endpoints (browser-based clients), origins from the tenant policy's
/// `registration_cors_origins`: the allowed `Origin` is echoed exactly (never `*`, never credentials).
struct RegistrationCORS: Sendable {
    static let allowedHeaders = "Authorization, Content-Type, DPoP, Idempotency-Key"
    static let exposedHeaders = "Retry-After, WWW-Authenticate"
    /// Seconds a browser may cache a preflight answer.
    static let maxAge = 600
    static let requestMethod = HTTPField.Name("Access-Control-Request-Method")!
    static let allowOrigin = HTTPField.Name("Access-Control-Allow-Origin")!
    static let allowMethods = HTTPField.Name("Access-Control-Allow-Methods")!
    static let allowHeaders = HTTPField.Name("Access-Control-Allow-Headers")!
    static let exposeHeaders = HTTPField.Name("Access-Control-Expose-Headers")!
    static let maxAgeField = HTTPField.Name("Access-Control-Max-Age")!
    static let origin = HTTPField.Name("Origin")!
    static let allow = HTTPField.Name("Allow")!

    /// The request's `Origin` when the tenant allows it (scheme and host compare case-insensitively, as browsers
    /// serialise them lower-case anyway); nil for no, several or a disallowed origin.
    static func allowedOrigin(of request: Request, tenant: ResolvedTenant) -> String? {
        let values = request.headers[values: origin]
        guard values.count == 1, let sent = values.first, sent.utf8.count <= 512 else { return nil }
        let lowered = sent.lowercased()
        return tenant.policy.registrationCORSOrigins.contains { $0.lowercased() == lowered } ? sent : nil
    }

    /// Answers a preflight for a route that serves `methods`: 204 with the CORS headers for an allowed
    /// origin and method, 403 for anything else that claims to be a preflight, a plain 204 + `Allow` otherwise.
    static func preflight(_ request: Request, context: LatchkeyRequestContext, methods: [HTTPRequest.Method]) throws
        -> Response
    {
        let tenant = try context.requireTenant()
        let methodList = (methods + [.options]).map(\.rawValue).joined(separator: ", ")
        var headers: HTTPFields = [.vary: "Origin"]
        guard request.headers[origin] != nil else {
            headers[allow] = methodList
            return Response(status: .noContent, headers: headers)
        }
        guard let allowed = allowedOrigin(of: request, tenant: tenant) else {
            throw OAuthError(
                .forbidden, "access_denied", "this origin may not call the registration endpoint",
                headers: headers)
        }
        guard let asked = request.headers[requestMethod], methods.contains(where: { $0.rawValue == asked }) else {
            throw OAuthError(
                .forbidden, "access_denied", "Access-Control-Request-Method is missing or not allowed here",
                headers: headers)
        }
        headers[allowOrigin] = allowed
        headers[allowMethods] = methodList
        headers[allowHeaders] = allowedHeaders
        headers[maxAgeField] = String(maxAge)
        return Response(status: .noContent, headers: headers)
    }
}

/// Adds the CORS headers of an allowed origin to every registration response, errors included (a browser
/// client must be able to read a 400 or 429), so errors are turned into responses here.
struct RegistrationCORSMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard request.method != .options, let tenant = context.tenant else { return try await next(request, context) }
        var response = try await ErrorMiddleware<Context>().handle(request, context: context, next: next)
        response.headers[.vary] = "Origin"
        if let allowed = RegistrationCORS.allowedOrigin(of: request, tenant: tenant) {
            response.headers[RegistrationCORS.allowOrigin] = allowed
            response.headers[RegistrationCORS.exposeHeaders] = RegistrationCORS.exposedHeaders
        }
        return response
    }
}
