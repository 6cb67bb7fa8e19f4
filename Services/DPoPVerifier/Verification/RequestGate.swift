import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer
import Prometheus

/// The request path shared by proxy and check mode: times the decision, counts it, and turns a
/// rejection into its RFC 9449 §7.1 response.
struct RequestGate: Sendable {
    let authenticator: RequestAuthenticator
    let challenges: Challenges
    /// Present when nonces are required.
    let nonces: (any DPoPNonceSource)?
    let metrics: SidecarMetrics

    func decide(method: String, target: RequestTarget, origin: String, headers: some RequestHeaderFields)
        async throws(OAuthError)
        -> RequestAuthenticator.Decision
    {
        let start = ContinuousClock.now
        defer { metrics.verificationDuration.record(ContinuousClock.now - start) }
        do {
            return try await authenticator.authenticate(
                method: method, target: target, origin: origin, headers: headers)
        } catch {
            throw rejected(error)
        }
    }

    /// `decide` without suspending; nil when the token must be verified first (then call `decide`).
    func decideNow(method: String, target: RequestTarget, origin: String, headers: some RequestHeaderFields)
        throws(OAuthError)
        -> RequestAuthenticator.Decision?
    {
        let start = ContinuousClock.now
        do {
            guard
                let decision = try authenticator.authenticateNow(
                    method: method, target: target, origin: origin, headers: headers)
            else { return nil }
            metrics.verificationDuration.record(ContinuousClock.now - start)
            return decision
        } catch {
            metrics.verificationDuration.record(ContinuousClock.now - start)
            throw rejected(error)
        }
    }

    private func rejected(_ error: SidecarRejection) -> OAuthError {
        metrics.countRequest(outcome: "rejected", reason: error.reason)
        return challenges.response(for: error, nonce: nonces?.currentNonce())
    }

    /// Counts a request that got through (after the upstream answered, in proxy mode).
    func countAllowed(_ decision: RequestAuthenticator.Decision) {
        switch decision {
        case .allowed(let identity): (identity.jkt == nil ? metrics.allowedBearer : metrics.allowedDPoP).increment()
        case .publicPath: metrics.allowedPublicPath.increment()
        }
    }

    /// RFC 9449 §9: a fresh nonce on every successful response while nonces are on.
    func stampNonce(_ status: HTTPResponse.Status, _ headers: inout HTTPFields) {
        if let nonce = nonce(forStatus: status.code) { headers[Challenges.dpopNonce] = nonce }
    }

    /// The nonce a response with status `code` must carry, if any.
    func nonce(forStatus code: Int) -> String? {
        guard let nonces, (200..<300).contains(code) else { return nil }
        return nonces.currentNonce()
    }
}
