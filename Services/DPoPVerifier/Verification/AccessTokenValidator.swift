import LatchkeyServer

/// Turns a presented access token into verified claims (the seam the vector tests replace, because
/// the vectors' tokens are opaque strings that no key signed).
protocol AccessTokenValidator: Sendable {
    func validate(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken
    /// The verdict when it is known without suspending (a cached token), nil when `validate` must run.
    func validateNow(_ token: String) -> VerifiedAccessToken?
}

extension AccessTokenValidator {
    func validateNow(_ token: String) -> VerifiedAccessToken? { nil }
}

/// RFC 9068 JWT verification against the issuers' JWKS, cached by token hash until `exp`.
struct CachedJWTValidator: AccessTokenValidator {
    let verifier: AccessTokenVerifier
    let cache: AccessTokenCache

    func validate(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken {
        try await cache.verify(token, with: verifier)
    }

    func validateNow(_ token: String) -> VerifiedAccessToken? {
        cache.cached(token, clockSkewSeconds: verifier.configuration.clockSkewSeconds)
    }
}
