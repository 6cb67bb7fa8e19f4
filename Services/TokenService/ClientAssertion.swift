import Foundation
import LatchkeyCore
import LatchkeyServer

/// `private_key_jwt` (RFC 7523 §3, OpenID Connect Core §9): a JWT signed with a key from the client's
/// registered `jwks` or the document at its `jwks_uri`, `iss` = `sub` = client_id, `aud` naming this server,
/// short-lived, `jti` single-use.
struct ClientAssertionVerifier: Sendable {
    static let assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    /// Longest accepted assertion lifetime, so a captured assertion is useless soon.
    static let maximumLifetimeSeconds: Int64 = 600
    static let leewaySeconds: Int64 = 30

    /// Remembers (client, jti) pairs until the assertion expires (one replica's view; see `DPoPReplayCache`).
    let replayCache: any DPoPReplayCache
    /// Key sets of clients registered with a `jwks_uri`, by URI: fetched under the outbound (SSRF) policy,
    /// cached, and fetched again for an unknown `kid` at most every 30 s per URI.
    let remoteKeys: JWKSCache
    var clock: any WallClock = SystemWallClock()

    struct Claims: Decodable {
        let iss: String
        let sub: String
        let aud: Audience
        let exp: Int64
        let jti: String
    }

    /// The client id an assertion claims (its `sub`), read before anything is verified, to find the client.
    static func claimedClientID(_ assertion: String) -> String? {
        guard let jws = try? CompactJWS(parsing: assertion, maximumLength: 8 * 1024),
            let claims = try? jws.claims(as: Claims.self), claims.iss == claims.sub
        else { return nil }
        return claims.sub
    }

    /// True when the assertion is valid for `client` at this server.
    func verify(_ assertion: String, client: StoredClient, endpoints: TenantEndpoints) async -> Bool {
        guard let jws = try? CompactJWS(parsing: assertion, maximumLength: 8 * 1024) else { return false }
        let candidates: [JWK]
        if let keys = Self.registeredKeys(of: client) {
            candidates = jws.header.kid.flatMap { keys.key(withID: $0) }.map { [$0] } ?? keys.keys
        } else if let uri = client.metadata.jwksURI {
            // An unreachable document, or no key with the assertion's `kid`, is a failed authentication.
            guard let keys = try? await remoteKeys.keys(issuer: uri, kid: jws.header.kid) else { return false }
            candidates = keys
        } else {
            return false
        }
        guard !candidates.isEmpty else { return false }
        // Only asymmetric algorithms exist in JWSAlgorithm, so `none` and HS* never verify.
        guard
            candidates.contains(where: {
                (try? jws.verify(using: $0, allowedAlgorithms: Set(JWSAlgorithm.allCases))) != nil
            }),
            let claims = try? jws.claims(as: Claims.self)
        else { return false }
        let now = Int64(clock.now().timeIntervalSince1970)
        guard claims.iss == client.clientID, claims.sub == client.clientID, !claims.jti.isEmpty,
            claims.jti.count <= 256,
            claims.aud.contains(endpoints.token) || claims.aud.contains(endpoints.issuer),
            claims.exp + Self.leewaySeconds > now, claims.exp <= now + Self.maximumLifetimeSeconds
        else { return false }
        return await replayCache.insertIfAbsent(
            jkt: "client-assertion:" + client.clientID, jti: claims.jti, expiresAt: claims.exp + Self.leewaySeconds)
    }

    /// The client's inline public keys (`jwks`); nil when it registered none.
    static func registeredKeys(of client: StoredClient) -> JWKSet? {
        guard let jwks = client.metadata.jwks, let data = try? LatchkeyJSON.encode(jwks) else { return nil }
        return try? LatchkeyJSON.makeDecoder().decode(JWKSet.self, from: data)
    }
}
