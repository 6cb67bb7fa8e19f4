import Foundation
import LatchkeyCore

/// The `id_token_hint` of an RP-Initiated Logout request: one of this tenant's own ID tokens, verified
/// with its published keys. Expiry is not checked, since a relying party typically logs out with the ID
/// token it got at sign-in, long expired by then.
struct IDTokenHint: Sendable, Equatable {
    let subject: UUID
    let clientID: String

    /// The hint's user and client, or nil when it is not a well-formed ID token this issuer signed.
    static func verify(_ token: String, issuer: String, keys: [JWK]) -> IDTokenHint? {
        guard token.utf8.count <= 8 * 1024,
            let jws = try? CompactJWS(parsing: token, maximumLength: 8 * 1024),
            jws.header.typ.map({ $0.lowercased() == "jwt" }) ?? true,
            let algorithm = try? jws.checkedAlgorithm(Set(JWSAlgorithm.allCases)),
            let claims = try? jws.claims(as: IDTokenClaims.self), claims.iss == issuer,
            let subject = UUID(uuidString: claims.sub)
        else { return nil }
        let candidates = jws.header.kid.map { kid in keys.filter { $0.kid == kid } } ?? keys
        // Our JWKS declares each key's alg: a key verifies only the algorithm it was made for.
        guard
            candidates.contains(where: {
                (try? jws.verify(using: $0, allowedAlgorithms: [algorithm], requireDeclaredAlgorithm: true)) != nil
            })
        else { return nil }
        return IDTokenHint(subject: subject, clientID: claims.aud)
    }
}
