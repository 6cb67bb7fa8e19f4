import HTTPTypes
import LatchkeyCore
import LatchkeyServer

/// Decides whether one request may pass: access token, revocation, Bearer policy, then the DPoP
/// proof (RFC 9449, through ``DPoPProofVerifier``). Cheap checks come first so a bad token
/// never costs a proof signature check or a replay-cache slot.
struct RequestAuthenticator: Sendable {
    /// What the caller should do with the request.
    enum Decision: Sendable, Equatable {
        case allowed(VerifiedIdentity)
        /// On the public-path list: forwarded without identity.
        case publicPath
    }

    let tokens: any AccessTokenValidator
    let proofs: DPoPProofVerifier
    let revocations: RevokedClients
    let publicPaths: PublicPaths
    let allowBearer: Bool

    /// The reason text the Shared verifier gives for a replayed `jti` (its metric label is `dpop_replay`).
    static let replayReason = DPoPProofVerifier.replayReason

    /// - Parameters:
    ///   - method: the method the client used (the original one in check mode).
    ///   - target: the origin-form target the client requested.
    ///   - origin: the external origin the client addressed; `htu` must equal `origin + path`.
    func authenticate(method: String, target: RequestTarget, origin: String, headers: some RequestHeaderFields)
        async throws(SidecarRejection) -> Decision
    {
        guard let credentials = try credentials(target: target, headers: headers) else { return .publicPath }
        let token: CheckedAccessToken
        if let cached = tokens.validateNow(credentials.token) {
            token = cached
        } else {
            do {
                token = CheckedAccessToken(
                    claims: try await tokens.validate(credentials.token),
                    ath: DPoPProofVerifier.accessTokenHash(credentials.token))
            } catch .keysUnavailable {
                throw SidecarRejection(
                    kind: .unavailable, description: AccessTokenError.keysUnavailable.description,
                    reason: AccessTokenError.keysUnavailable.reason, scheme: credentials.scheme)
            } catch {
                throw SidecarRejection(
                    kind: .invalidToken, description: error.description, reason: error.reason,
                    scheme: credentials.scheme)
            }
        }
        return try authenticate(
            token: token, credentials: credentials, method: method, target: target, origin: origin,
            headers: headers)
    }

    /// `authenticate` without suspending: the decision, or nil when the token is not cached and
    /// must be verified first (the caller then uses the async `authenticate`).
    func authenticateNow(method: String, target: RequestTarget, origin: String, headers: some RequestHeaderFields)
        throws(SidecarRejection) -> Decision?
    {
        guard let credentials = try credentials(target: target, headers: headers) else { return .publicPath }
        guard let token = tokens.validateNow(credentials.token) else { return nil }
        return try authenticate(
            token: token, credentials: credentials, method: method, target: target, origin: origin,
            headers: headers)
    }

    /// The request's credentials; nil for a public path.
    private func credentials(target: RequestTarget, headers: some RequestHeaderFields) throws(SidecarRejection)
        -> AuthorizationCredentials?
    {
        if publicPaths.contains(target.path) { return nil }
        guard revocations.isLoaded else {
            throw SidecarRejection(
                kind: .unavailable, description: "the revocation list is still loading", reason: "not_ready")
        }
        do {
            return try AuthorizationCredentials(headers: headers)
        } catch {
            switch error {
            case .missing:
                throw SidecarRejection(
                    kind: .unauthenticated, description: "a DPoP-bound access token is required",
                    reason: "missing_credentials")
            case .malformed(let detail):
                throw SidecarRejection(kind: .invalidRequest, description: detail, reason: "malformed_authorization")
            }
        }
    }

    /// Everything after the token's signature: revocation, the Bearer policy, then the DPoP proof
    /// (synchronously: the replay cache is in-process).
    private func authenticate(
        token checked: CheckedAccessToken, credentials: AuthorizationCredentials, method: String,
        target: RequestTarget, origin: String, headers: some RequestHeaderFields
    ) throws(SidecarRejection) -> Decision {
        let token = checked.claims
        let scheme = credentials.scheme
        if revocations.contains(tenant: token.tenant, clientID: token.clientID) {
            throw SidecarRejection(
                kind: .invalidToken, description: "the client has been revoked", reason: "client_revoked",
                scheme: scheme)
        }
        if revocations.containsToken(tenant: token.tenant, jti: token.jti) {
            throw SidecarRejection(
                kind: .invalidToken, description: "the token has been revoked", reason: "token_revoked",
                scheme: scheme)
        }
        if revocations.isUserDisabled(tenant: token.tenant, subject: token.subject) {
            throw SidecarRejection(
                kind: .invalidToken, description: "the user has been disabled", reason: "user_disabled",
                scheme: scheme)
        }

        switch scheme {
        case .bearer:
            guard allowBearer else {
                throw SidecarRejection(
                    kind: .invalidToken, description: "Bearer tokens are not accepted here; use DPoP",
                    reason: "bearer_not_allowed", scheme: .bearer)
            }
            // RFC 9449 §7.2: a DPoP-bound token must never be accepted as a Bearer token (downgrade).
            guard token.jkt == nil else {
                throw SidecarRejection(
                    kind: .invalidToken, description: "a DPoP-bound token was presented as a Bearer token",
                    reason: "bearer_downgrade", scheme: .bearer)
            }
            return .allowed(VerifiedIdentity(token: token))
        case .dpop:
            guard let jkt = token.jkt else {
                throw SidecarRejection(
                    kind: .invalidToken, description: "the access token is not DPoP-bound (no cnf.jkt)",
                    reason: "token_not_dpop_bound")
            }
            do {
                _ = try proofs.verifySynchronously(
                    headerValues: headers.values(.dpop), method: method,
                    url: origin + target.path, accessTokenHash: checked.ath, expectedJKT: jkt)
            } catch {
                switch error {
                case .useNonce(let detail):
                    throw SidecarRejection(kind: .useNonce, description: detail, reason: "use_dpop_nonce")
                case .invalidProof(let detail):
                    throw SidecarRejection(
                        kind: .invalidProof, description: detail,
                        reason: detail == Self.replayReason ? "dpop_replay" : "invalid_dpop_proof")
                }
            }
            return .allowed(VerifiedIdentity(token: token))
        }
    }
}

extension HTTPField.Name {
    /// RFC 9449 §4.1.
    static let dpop = HTTPField.Name("DPoP")!
}
