import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// Authenticates admin API calls: an admin access token (scope `admin`, verified by
/// ``AdminTokenVerifier``) or, for bootstrapping only, the configured `ADMIN_BOOTSTRAP_KEY`.
struct AdminAuthenticator: Sendable {
    /// The one action the bootstrap key may perform, checked by the caller against the database.
    enum BootstrapUse: Sendable {
        /// Creating the very first tenant.
        case firstTenant
        /// Creating the first static client (e.g. the admin client) of a tenant that has none.
        case firstClient
    }

    let verifier: AdminTokenVerifier
    let bootstrapKey: String?

    /// Who performs the action: the admin token's subject, or `bootstrap` when the key was used.
    func actor(_ request: Request, tenant: TenantSlug, bootstrap: BootstrapUse? = nil) async throws -> (EventActor, BootstrapUse?) {
        let authorizations = request.headers[values: .authorization]
        guard authorizations.count <= 1 else { throw OAuthError.invalidRequest("more than one Authorization header") }
        if let bootstrap, let key = bootstrapKey, let presented = (try? BearerToken.extract(from: request)) ?? nil,
           presented.utf8.filter({ $0 == UInt8(ascii: ".") }).count != 2 {
            // Constant-time: the key is a secret; a wrong key is the same 401 as a bad token.
            guard ConstantTime.equals(presented, key) else {
                throw OAuthError(.unauthorized, "invalid_token", "the bootstrap key is not valid",
                                 headers: [.wwwAuthenticate: #"Bearer realm="latchkey", error="invalid_token""#])
            }
            return (EventActor(type: .admin, id: "bootstrap"), bootstrap)
        }
        let principal = try await verifier.verify(authorization: authorizations.first, for: tenant)
        return (EventActor(type: .admin, id: principal.subject), nil)
    }
}
