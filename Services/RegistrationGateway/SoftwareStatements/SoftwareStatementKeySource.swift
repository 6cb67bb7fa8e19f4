import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import Logging

/// The public keys of a trusted software statement issuer: its inline JWK Set from the policy, or
/// the set at its `jwks_uri`, fetched once and cached (``JWKSCache``: refreshed when stale or on an
/// unknown `kid`, at most every 30 s per URI, kept when a refresh fails).
struct SoftwareStatementKeySource: Sendable {
    private let cache: JWKSCache

    /// `fetch` gets the JWK Set at a URI (``JWKSDocumentFetcher`` in production).
    init(logger: Logger, maxAge: TimeInterval = 300, fetch: @escaping JWKSCache.Fetch) {
        cache = JWKSCache(maxAge: maxAge, logger: logger, fetch: fetch)
    }

    /// The issuer's keys that may have signed a statement naming `kid` (every key when nil).
    func keys(for issuer: TrustedSoftwareStatementIssuer, kid: String?) async throws -> [JWK] {
        switch issuer.keys {
        case .jwks(let inline):
            let set: JWKSet
            do { set = try LatchkeyJSON.decode(JWKSet.self, from: LatchkeyJSON.encode(inline)) } catch {
                // The policy validator refuses such sets; an older stored policy may still hold one.
                throw SoftwareStatementVerifier.invalid("the trusted issuer's configured jwks is not a valid JWK Set")
            }
            return set.keys.filter { kid == nil || $0.kid == kid }
        case .jwksURI(let uri):
            do {
                return try await cache.keys(issuer: uri, kid: kid)
            } catch {
                throw OAuthError(
                    .serviceUnavailable, "temporarily_unavailable",
                    "the software statement issuer's keys could not be fetched; try again later",
                    headers: [.retryAfter: "30"])
            }
        }
    }
}
