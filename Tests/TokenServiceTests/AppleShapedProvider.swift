import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer
import NIOCore

/// An upstream OpenID Connect provider shaped like Sign in with Apple, on loopback HTTP: discovery, JWKS,
/// an authorization endpoint that answers with an auto-submitting `form_post` page (including Apple's
/// one-time `user` JSON), and a token endpoint that authenticates the client the way it is configured to
/// (Apple's ES256 client-secret JWT, `client_secret_post` or `private_key_jwt`) and checks PKCE.
actor AppleShapedProvider {
    enum ClientAuthentication: Sendable {
        /// `client_secret` must be an ES256 JWT by `key` with `kid`, `iss` = team id, `sub` = client id, `aud`.
        case appleClientSecret(key: JWSPublicKey, keyID: String, teamID: String, audience: String?)
        /// `client_secret` in the body, no Authorization header.
        case post(secret: String)
        /// An RFC 7523 assertion verifying with `key` (set once the gateway showed the public JWK).
        case privateKeyJWT(key: JWK?)
    }

    struct Grant {
        let nonce: String
        let challenge: String
        let redirectURI: String
    }

    let clientID: String
    var authentication: ClientAuthentication
    let subject = "001234.5b6c7d8e9fa04b1c.0123"
    let idTokenKey: SigningKey
    var issuer = ""
    var user: String? = #"{"name":{"firstName":"Jane","lastName":"Appleseed"},"email":"jane@privaterelay.example"}"#
    private var grants: [String: Grant] = [:]
    /// Why the token endpoint refused each refused request, and how many exchanges succeeded.
    private(set) var refusals: [String] = []
    private(set) var exchanges = 0
    private var assertionIDs: Set<String> = []

    init(clientID: String, authentication: ClientAuthentication) throws {
        self.clientID = clientID
        self.authentication = authentication
        self.idTokenKey = try SigningKey.generate(.rs256)
    }

    func started(port: Int) { issuer = "http://127.0.0.1:\(port)" }
    func authenticate(with authentication: ClientAuthentication) { self.authentication = authentication }

    nonisolated func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get(".well-known/openid-configuration") { _, _ in try await self.json(self.discovery()) }
        router.get("auth/keys") { _, _ in try await self.json(["keys": [self.idTokenKey.publicJWK(kid: "apple-1")]]) }
        router.get("auth/authorize") { request, _ in await self.authorize(request.uri.queryParameters) }
        router.post("auth/token") { request, context in
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await self.token(
                form: try FormParameters.parse(String(buffer: body)), authorization: request.headers[.authorization])
        }
        return router
    }

    private func discovery() -> [String: String] {
        [
            "issuer": issuer, "authorization_endpoint": "\(issuer)/auth/authorize",
            "token_endpoint": "\(issuer)/auth/token", "jwks_uri": "\(issuer)/auth/keys",
        ]
    }

    private nonisolated func json<T: Encodable>(_ value: T) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: Array(try JSONEncoder().encode(value)))))
    }

    private func authorize(_ query: Hummingbird.Parameters) -> Response {
        guard query["response_mode"] == "form_post", query["response_type"] == "code",
            query["client_id"].map(String.init) == clientID, query["code_challenge_method"] == "S256",
            let redirectURI = query["redirect_uri"].map(String.init), let state = query["state"].map(String.init),
            let nonce = query["nonce"].map(String.init), let challenge = query["code_challenge"].map(String.init)
        else { return Response(status: .badRequest, body: .init(byteBuffer: ByteBuffer(string: "invalid_request"))) }
        let code = "c" + SecretTokens.generate()
        grants[code] = Grant(nonce: nonce, challenge: challenge, redirectURI: redirectURI)
        var fields = [("code", code), ("state", state)]
        if let user { fields.append(("user", user)) }
        let inputs = fields.map { #"<input type="hidden" name="\#($0.0)" value="\#(Self.escape($0.1))">"# }
        let page = """
            <html><body onload="document.forms[0].submit()"><form method="post" action="\(Self.escape(redirectURI))">\
            \(inputs.joined())</form></body></html>
            """
        return Response(
            status: .ok, headers: [.contentType: "text/html"], body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
    }

    private func refuse(_ reason: String) -> Response {
        refusals.append(reason)
        return Response(
            status: .badRequest, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"error":"invalid_client"}"#)))
    }

    private func token(form: FormParameters, authorization: String?) -> Response {
        let now = Int64(Date().timeIntervalSince1970)
        guard form["client_id"] == clientID else { return refuse("client_id missing from the body") }
        switch authentication {
        case .appleClientSecret(let key, let keyID, let teamID, let audience):
            guard authorization == nil else { return refuse("Authorization header sent") }
            guard let secret = form["client_secret"], let jws = try? CompactJWS(parsing: secret) else {
                return refuse("client_secret is not a JWT")
            }
            guard jws.header.alg == "ES256", jws.header.kid == keyID else { return refuse("wrong alg or kid") }
            guard (try? jws.verify(using: key, allowedAlgorithms: [.es256])) != nil else {
                return refuse("client secret signature")
            }
            guard let claims = try? jws.payloadObject(), claims["iss"] as? String == teamID,
                claims["sub"] as? String == clientID, claims["aud"] as? String == (audience ?? issuer),
                let iat = claims["iat"] as? Int64 ?? (claims["iat"] as? Int).map(Int64.init),
                let exp = claims["exp"] as? Int64 ?? (claims["exp"] as? Int).map(Int64.init),
                exp > now, iat <= now + 5, exp - iat <= 15_777_000
            else { return refuse("client secret claims") }
        case .post(let expected):
            guard authorization == nil else { return refuse("Authorization header sent") }
            guard form["client_secret"] == expected else { return refuse("wrong client_secret") }
        case .privateKeyJWT(let key):
            guard authorization == nil, form["client_secret"] == nil else { return refuse("a secret was sent") }
            guard form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                let assertion = form["client_assertion"], let jws = try? CompactJWS(parsing: assertion)
            else { return refuse("no client assertion") }
            guard let key, jws.header.kid == key.kid,
                (try? jws.verify(using: key, allowedAlgorithms: Set(JWSAlgorithm.allCases))) != nil
            else { return refuse("client assertion signature") }
            guard let claims = try? jws.payloadObject(), claims["iss"] as? String == clientID,
                claims["sub"] as? String == clientID, claims["aud"] as? String == "\(issuer)/auth/token",
                let jti = claims["jti"] as? String, assertionIDs.insert(jti).inserted,
                let exp = claims["exp"] as? Int64 ?? (claims["exp"] as? Int).map(Int64.init), exp > now
            else { return refuse("client assertion claims") }
        }
        guard form["grant_type"] == "authorization_code", let code = form["code"], let grant = grants[code] else {
            return refuse("unknown code")
        }
        grants[code] = nil
        guard form["redirect_uri"] == grant.redirectURI, let verifier = form["code_verifier"],
            PKCE.s256Challenge(for: verifier) == grant.challenge
        else { return refuse("redirect_uri or PKCE") }
        struct IDTokenClaims: Encodable {
            let iss: String
            let sub: String
            let aud: String
            let iat: Int64
            let exp: Int64
            let nonce: String
            let email: String
            // Apple sends these booleans as strings.
            let emailVerified: String
            let isPrivateEmail: String

            enum CodingKeys: String, CodingKey {
                case iss, sub, aud, iat, exp, nonce, email
                case emailVerified = "email_verified"
                case isPrivateEmail = "is_private_email"
            }
        }
        let idToken = try? CompactJWS.sign(
            claims: IDTokenClaims(
                iss: issuer, sub: subject, aud: clientID, iat: now, exp: now + 600, nonce: grant.nonce,
                email: "jane@privaterelay.example", emailVerified: "true", isPrivateEmail: "true"),
            using: idTokenKey, header: JWSHeaderParameters(kid: "apple-1"))
        exchanges += 1
        let body = #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"id_token":"\#(idToken ?? "")"}"#
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
