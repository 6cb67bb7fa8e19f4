import Hummingbird
import Shared

/// Proxy mode. Added to the router after the health routes, so it wraps only the router's
/// not-found responder: every request that is not one of the sidecar's own endpoints lands here,
/// is verified, and is forwarded; it never falls through to the 404.
struct ProxyMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext

    let gate: RequestGate
    let resolver: OriginResolver
    let proxy: UpstreamProxy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // One bounded label for the metrics middleware instead of "NotFound".
        context.coreContext.endpointPath.value = "/{proxied}"
        guard let target = RequestTarget(request.head.path ?? "") else {
            gate.metrics.countRequest(outcome: "rejected", reason: "invalid_target")
            throw OAuthError.invalidRequest("the request target must be an absolute path of RFC 3986 characters")
        }
        let trusted = resolver.isTrusted(context.remoteAddress)
        let origin = resolver.origin(authority: request.head.authority, headers: request.headers, peerTrusted: trusted)
        let decision = try await gate.decide(method: request.method.rawValue, target: target, origin: origin, headers: request.headers)
        let identity: VerifiedIdentity? = if case .allowed(let identity) = decision { identity } else { nil }

        var response: Response
        do {
            response = try await proxy.forward(
                request, target: target, identity: identity,
                client: .init(origin: origin, peer: context.remoteAddress, peerTrusted: trusted))
        } catch let error as OAuthError {
            gate.metrics.countRequest(outcome: "upstream_error", reason: error.code)
            throw error
        }
        gate.countAllowed(decision)
        gate.stampNonce(response.status, &response.headers)
        return response
    }
}
