import LatchkeyCore
import LatchkeyServer

/// A verified access token with its RFC 9449 `ath` (base64url SHA-256 of the token), worked out once
/// per token rather than once per request.
struct CheckedAccessToken: Sendable {
    let claims: VerifiedAccessToken
    let ath: String
}

/// Turns a presented access token into verified claims (the seam the vector tests replace, because
/// the vectors' tokens are opaque strings that no key signed).
protocol AccessTokenValidator: Sendable {
    func validate(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken
    /// The verdict when it is known without suspending (a cached token), nil when `validate` must run.
    func validateNow(_ token: String) -> CheckedAccessToken?
}

extension AccessTokenValidator {
    func validateNow(_ token: String) -> CheckedAccessToken? { nil }
}

/// RFC 9068 JWT verification against the issuers' JWKS, cached by token hash until `exp`.
struct CachedJWTValidator: AccessTokenValidator {
    let verifier: AccessTokenVerifier
    let cache: AccessTokenCache

    func validate(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken {
        try await cache.verify(token, with: verifier)
    }

    func validateNow(_ token: String) -> CheckedAccessToken? {
        cache.cachedEntry(token, clockSkewSeconds: verifier.configuration.clockSkewSeconds).map {
            CheckedAccessToken(claims: $0.token, ath: $0.accessTokenHash)
        }
    }
}
