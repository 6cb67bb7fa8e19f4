import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// DPoP (RFC 9449) at the token endpoint: verifies the proof, demands one where policy or client require it,
/// and hands out nonces where the tenant requires them.
struct TokenEndpointDPoP: Sendable {
    static let headerName = HTTPField.Name("DPoP")!
    static let nonceHeaderName = HTTPField.Name("DPoP-Nonce")!

    private let withoutNonce: DPoPProofVerifier
    private let withNonce: DPoPProofVerifier
    let nonces: HMACDPoPNonceSource

    init(nonces: HMACDPoPNonceSource, iatWindowSeconds: Int64, replayCache: any DPoPReplayCache) {
        self.nonces = nonces
        self.withoutNonce = DPoPProofVerifier(
            configuration: .init(iatWindowSeconds: iatWindowSeconds, nonceMode: .disabled), replayCache: replayCache)
        self.withNonce = DPoPProofVerifier(
            configuration: .init(iatWindowSeconds: iatWindowSeconds, nonceMode: .required), replayCache: replayCache,
            nonceSource: nonces)
    }

    /// The verified proof, or nil when none was sent and none is required.
    func verify(
        request: Request, url: String, tenant: ResolvedTenant, required: Bool, accessToken: String? = nil,
        expectedJKT: String? = nil
    ) async throws -> DPoPVerifiedProof? {
        let values = request.headers[values: Self.headerName]
        if values.isEmpty {
            guard required else { return nil }
            throw error(.invalidProof("a DPoP proof is required"), tenant: tenant)
        }
        let verifier = tenant.policy.dpop.nonceRequired ? withNonce : withoutNonce
        do throws(DPoPError) {
            return try await verifier.verify(
                headerValues: values, method: request.method.rawValue, url: url, accessToken: accessToken,
                expectedJKT: expectedJKT)
        } catch {
            throw self.error(error, tenant: tenant)
        }
    }

    /// A proof at a resource (userinfo): `ath` and `cnf.jkt` checked, failures are 401 (RFC 9449 §7.1).
    func verifyResource(
        request: Request, url: String, tenant: ResolvedTenant, accessToken: String, expectedJKT: String
    ) async throws -> DPoPVerifiedProof {
        let verifier = tenant.policy.dpop.nonceRequired ? withNonce : withoutNonce
        do throws(DPoPError) {
            return try await verifier.verify(
                headerValues: request.headers[values: Self.headerName], method: request.method.rawValue, url: url,
                accessToken: accessToken, expectedJKT: expectedJKT)
        } catch {
            throw self.error(error, tenant: tenant, status: .unauthorized)
        }
    }

    /// `invalid_dpop_proof` / `use_dpop_nonce` (400 at the token endpoint, RFC 9449 §5, §8).
    func error(_ error: DPoPError, tenant: ResolvedTenant, status: HTTPResponse.Status = .badRequest) -> OAuthError {
        var headers = HTTPFields()
        if error.requiresNonce || tenant.policy.dpop.nonceRequired {
            headers[Self.nonceHeaderName] = nonces.currentNonce()
        }
        if status == .unauthorized {
            headers[.wwwAuthenticate] =
                "DPoP error=\"\(error.errorCode)\", algs=\"\(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: " "))\""
        }
        return OAuthError(status, error.errorCode, error.reason, headers: headers)
    }

    /// A fresh nonce for every response of a tenant that requires nonces.
    func responseHeaders(tenant: ResolvedTenant) -> HTTPFields {
        tenant.policy.dpop.nonceRequired ? [Self.nonceHeaderName: nonces.currentNonce()] : [:]
    }
}
