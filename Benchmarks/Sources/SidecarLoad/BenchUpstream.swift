import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Shared

/// The trivial API behind the sidecar ("ok" for every request) and the issuer the sidecar trusts
/// (RFC 8414 discovery + JWKS for tenant `bench`), in the load generator's process.
struct BenchUpstream {
    static let tenant = "bench"
    let issuerKey: SigningKey
    let kid = "bench-1"
    let port: Int

    var issuer: String { "http://127.0.0.1:\(port)/t/\(Self.tenant)" }

    func makeApplication() throws -> some ApplicationProtocol {
        let router = Router()
        let issuer = self.issuer
        let jwks = try JSONEncoder().encode(JWKSet(keys: [issuerKey.publicJWK(kid: kid)]))
        let discovery = try JSONSerialization.data(withJSONObject: ["issuer": issuer, "jwks_uri": issuer + "/jwks"])
        router.get("/.well-known/oauth-authorization-server/t/\(Self.tenant)") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: discovery)))
        }
        router.get("/t/\(Self.tenant)/jwks") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: jwks)))
        }
        router.add(middleware: OKMiddleware())
        var logger = Logger(label: "bench.upstream")
        logger.logLevel = .error
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
    }

    /// An access token (RFC 9068) for `jkt`, valid for an hour.
    func token(jkt: String, audience: String) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": issuer, "sub": "bench-user", "aud": audience, "exp": now + 3_600, "iat": now, "jti": UUID().uuidString,
            "client_id": "bench-client", "scope": "bench", "cnf": ["jkt": jkt],
        ]
        let payload = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return try CompactJWS.sign(payload: payload, using: issuerKey, header: JWSHeaderParameters(typ: "at+jwt", kid: kid))
    }
}

/// Answers every request no route matched with a 2-byte body.
struct OKMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    static let body = ByteBuffer(string: "ok")

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: Self.body))
    }
}
