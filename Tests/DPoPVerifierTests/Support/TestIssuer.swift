import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyTestSupport
import NIOCore
import NIOFoundationCompat
import Synchronization

/// A Latchkey-shaped issuer for tests: RFC 8414 discovery and a JWKS (served by the test upstream
/// on loopback), and real RFC 9068 access tokens signed with its keys.
final class TestIssuer: Sendable {
    struct Key: Sendable {
        let kid: String
        let key: SigningKey
    }

    let tenant: String
    private let keys: Mutex<[Key]>
    private let fetches = Atomic<Int>(0)
    private let failing = Atomic<Bool>(false)

    init(tenant: String = "acme", algorithm: JWSAlgorithm = .es256) throws {
        self.tenant = tenant
        keys = Mutex([Key(kid: "k1", key: try SigningKey.generate(algorithm))])
    }

    /// The issuer URL when served on `port`.
    func issuer(port: Int) -> String { "http://127.0.0.1:\(port)/t/\(tenant)" }

    /// JWKS requests served so far.
    var jwksFetches: Int { fetches.load(ordering: .relaxed) }

    /// Makes discovery and JWKS answer 503 (issuer outage) or serve again.
    func setFailing(_ value: Bool) { failing.store(value, ordering: .relaxed) }

    /// Publishes a new key (rotation); tokens signed with it carry `kid`.
    func addKey(kid: String, algorithm: JWSAlgorithm = .es256) throws {
        let key = Key(kid: kid, key: try SigningKey.generate(algorithm))
        keys.withLock { $0.append(key) }
    }

    func addRoutes(to router: Router<BasicRequestContext>) {
        let tenant = self.tenant
        router.get("/.well-known/oauth-authorization-server/t/\(tenant)") { request, _ -> Response in
            guard !self.failing.load(ordering: .relaxed) else { return Response(status: .serviceUnavailable) }
            let base = "http://\(request.head.authority ?? "")/t/\(tenant)"
            return try Self.json(["issuer": base, "jwks_uri": base + "/jwks"])
        }
        router.get("/t/\(tenant)/jwks") { _, _ -> Response in
            self.fetches.add(1, ordering: .relaxed)
            guard !self.failing.load(ordering: .relaxed) else { return Response(status: .serviceUnavailable) }
            let set = JWKSet(keys: self.keys.withLock { $0.map { $0.key.publicJWK(kid: $0.kid) } })
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(set))))
        }
    }

    private static func json(_ object: [String: String]) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))))
    }

    struct TokenClaims: Encodable {
        var iss: String
        var sub = "user-1"
        var aud: [String] = ["https://api.example.com"]
        var exp: Int64
        var nbf: Int64?
        var iat: Int64
        var jti = UUID().uuidString.lowercased()
        var clientID = "client-1"
        var scope: String? = "orders:read"
        var cnf: [String: String]?

        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, exp, nbf, iat, jti, scope, cnf
            case clientID = "client_id"
        }
    }

    /// Standard claims for a token of this issuer, valid for `lifetime` seconds from `now`.
    func claims(
        port: Int, jkt: String?, clientID: String = "client-1", now: Int64 = Int64(Date().timeIntervalSince1970),
        lifetime: Int64 = 300
    ) -> TokenClaims {
        TokenClaims(
            iss: issuer(port: port), exp: now + lifetime, iat: now, clientID: clientID, cnf: jkt.map { ["jkt": $0] })
    }

    /// Signs `claims` as an `at+jwt` with the key `kid` (default: the first).
    func sign(_ claims: TokenClaims, kid: String? = nil, typ: String = "at+jwt") throws -> String {
        let key = try keys.withLock { keys in
            guard let found = kid.map({ kid in keys.first { $0.kid == kid } }) ?? keys.first else {
                throw TestFailure("no issuer key \(kid ?? "")")
            }
            return found
        }
        return try CompactJWS.sign(claims: claims, using: key.key, header: JWSHeaderParameters(typ: typ, kid: key.kid))
    }

    /// The published JWK of the key `kid` (default: the first).
    func publishedKey(kid: String? = nil) -> JWK? {
        keys.withLock { keys in
            (kid.map { kid in keys.first { $0.kid == kid } } ?? keys.first).map { $0.key.publicJWK(kid: $0.kid) }
        }
    }

    /// A DPoP-bound token for `signer`'s key.
    func token(port: Int, boundTo signer: DPoPProofSigner?, clientID: String = "client-1") throws -> String {
        try sign(claims(port: port, jkt: signer?.jkt, clientID: clientID))
    }
}
