import HTTPTypes
import Hummingbird
import LatchkeyServer

/// Check mode: `GET|POST /check` answers a gateway's auth subrequest (nginx `auth_request`,
/// Traefik `forwardAuth`, Envoy `ext_authz` over HTTP) with 200 + identity headers or the same
/// 401 the proxy would give. The original method and URI come from `X-Forwarded-Method` and
/// `X-Forwarded-Uri` only when the caller is a trusted proxy; anyone else is checked against
/// their own request (`/check`), so a proof made for another URL fails.
struct CheckController: Sendable {
    typealias Context = LatchkeyRequestContext

    static let forwardedMethod = HTTPField.Name("X-Forwarded-Method")!
    static let forwardedURI = HTTPField.Name("X-Forwarded-Uri")!

    let gate: RequestGate
    let resolver: OriginResolver

    func addRoutes(to router: Router<Context>) {
        router.get("/check", use: check)
        router.post("/check", use: check)
    }

    @Sendable func check(_ request: Request, context: Context) async throws -> Response {
        let trusted = resolver.isTrusted(context.remoteAddress)
        var method = request.method.rawValue
        var rawTarget = request.head.path ?? ""
        if trusted {
            if let forwarded = request.headers[Self.forwardedMethod] {
                guard Self.isMethodToken(forwarded) else {
                    throw OAuthError.invalidRequest("X-Forwarded-Method is not an HTTP method")
                }
                method = forwarded
            }
            if let forwarded = request.headers[Self.forwardedURI] { rawTarget = forwarded }
        }
        guard let target = RequestTarget(rawTarget) else {
            gate.metrics.countRequest(outcome: "rejected", reason: "invalid_target")
            throw OAuthError.invalidRequest("the original URI must be an absolute path of RFC 3986 characters")
        }
        let origin = resolver.origin(authority: request.head.authority, headers: request.headers, peerTrusted: trusted)
        let decision = try await gate.decide(method: method, target: target, origin: origin, headers: request.headers)
        gate.countAllowed(decision)
        var headers: HTTPFields = [.cacheControl: "no-store"]
        if case .allowed(let identity) = decision { IdentityHeaders.add(identity, to: &headers) }
        gate.stampNonce(.ok, &headers)
        return Response(status: .ok, headers: headers)
    }

    /// RFC 9110 method token, at most 32 characters.
    static func isMethodToken(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 32
            && value.utf8.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }
}
