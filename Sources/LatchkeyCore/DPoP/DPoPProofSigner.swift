import Crypto
import Foundation

/// Creates DPoP proofs (RFC 9449 §4.2) — the client side, for the demo client and tests.
public struct DPoPProofSigner: Sendable {
    public let key: SigningKey
    private let clock: any WallClock

    public init(key: SigningKey, clock: any WallClock = SystemWallClock()) {
        self.key = key
        self.clock = clock
    }

    /// RFC 7638 thumbprint of this signer's public key (the `dpop_jkt` / `cnf.jkt` value).
    public var jkt: String {
        key.publicKey.thumbprint
    }

    /// A signed proof for one request. `url` is sent without query and fragment.
    public func proof(
        method: String, url: String, accessToken: String? = nil, nonce: String? = nil,
        jti: String = UUID().uuidString.lowercased(), iat: Int64? = nil
    ) throws(JOSEError) -> String {
        let htu = Self.stripQueryAndFragment(url)
        let claims = DPoPProofClaims(
            jti: jti, htm: method, htu: htu,
            iat: iat ?? Int64(clock.now().timeIntervalSince1970.rounded(.down)),
            ath: accessToken.map(DPoPProofVerifier.accessTokenHash),
            nonce: nonce)
        return try CompactJWS.sign(
            claims: claims, using: key,
            header: JWSHeaderParameters(typ: DPoPProofVerifier.proofType, jwk: key.bareJWK))
    }

    private static func stripQueryAndFragment(_ url: String) -> String {
        guard let cut = url.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return url }
        return String(url[..<cut])
    }
}
