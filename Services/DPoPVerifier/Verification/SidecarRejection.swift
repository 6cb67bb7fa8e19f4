import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// A request the sidecar refuses, with everything needed for the RFC 9449 §7.1 / RFC 6750 §3 answer.
struct SidecarRejection: Error, Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// No usable credentials: 401 with bare challenges (no error code, RFC 6750 §3.1).
        case unauthenticated
        /// 400 `invalid_request`.
        case invalidRequest
        /// 401 `invalid_token`.
        case invalidToken
        /// 401 `invalid_dpop_proof`.
        case invalidProof
        /// 401 `use_dpop_nonce` with a fresh `DPoP-Nonce`.
        case useNonce
        /// 503: the sidecar cannot decide yet (revocations loading, issuer keys unreachable).
        case unavailable
    }

    let kind: Kind
    /// Sent as `error_description` (sanitised) and in the JSON body.
    let description: String
    /// Bounded metric label.
    let reason: String
    /// The scheme the client used, so its challenge carries the error.
    var scheme: AuthorizationCredentials.Scheme = .dpop

    var errorCode: String? {
        switch kind {
        case .unauthenticated: return nil
        case .invalidRequest: return "invalid_request"
        case .invalidToken: return "invalid_token"
        case .invalidProof: return "invalid_dpop_proof"
        case .useNonce: return "use_dpop_nonce"
        case .unavailable: return "temporarily_unavailable"
        }
    }

    var status: HTTPResponse.Status {
        switch kind {
        case .invalidRequest: return .badRequest
        case .unavailable: return .serviceUnavailable
        case .unauthenticated, .invalidToken, .invalidProof, .useNonce: return .unauthorized
        }
    }
}

/// Builds `WWW-Authenticate` challenges: `DPoP` always (with `algs`), `Bearer` too when Bearer tokens are allowed.
struct Challenges: Sendable {
    static let dpopNonce = HTTPField.Name("DPoP-Nonce")!

    /// `algs="ES256 PS256"` in configuration order.
    let algs: String
    let allowBearer: Bool

    init(algorithms: [JWSAlgorithm], allowBearer: Bool) {
        algs = algorithms.map(\.rawValue).joined(separator: " ")
        self.allowBearer = allowBearer
    }

    /// The JSON error response, with the challenges and, for `use_dpop_nonce`, `nonce`.
    func response(for rejection: SidecarRejection, nonce: String?) -> OAuthError {
        var headers = HTTPFields()
        if rejection.status == .serviceUnavailable {
            headers[.retryAfter] = "1"
        } else {
            let error = rejection.errorCode.map { (code: $0, description: Self.sanitize(rejection.description)) }
            headers.append(HTTPField(name: .wwwAuthenticate, value: dpop(rejection.scheme == .dpop ? error : nil)))
            if allowBearer {
                headers.append(
                    HTTPField(name: .wwwAuthenticate, value: bearer(rejection.scheme == .bearer ? error : nil)))
            }
        }
        if rejection.kind == .useNonce, let nonce {
            headers[Self.dpopNonce] = nonce
        }
        // A bare 401 still gets a JSON body; the project's code for it is invalid_token.
        return OAuthError(
            rejection.status, rejection.errorCode ?? "invalid_token", Self.sanitize(rejection.description),
            headers: headers)
    }

    private func dpop(_ error: (code: String, description: String)?) -> String {
        guard let error else { return "DPoP algs=\"\(algs)\"" }
        return "DPoP error=\"\(error.code)\", error_description=\"\(error.description)\", algs=\"\(algs)\""
    }

    private func bearer(_ error: (code: String, description: String)?) -> String {
        guard let error else { return "Bearer" }
        return "Bearer error=\"\(error.code)\", error_description=\"\(error.description)\""
    }

    /// RFC 6750 §3: `error_description` is `%x20-21 / %x23-5B / %x5D-7E`; anything else (quotes,
    /// backslashes, control bytes from attacker-chosen header values) becomes a space. Capped at 200.
    static func sanitize(_ text: String) -> String {
        let bytes = text.utf8.prefix(200).map { byte -> UInt8 in
            (0x20...0x7E).contains(byte) && byte != 0x22 && byte != 0x5C ? byte : 0x20
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
