import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// `ADMIN_BOOTSTRAP_KEY`, accepted in place of an admin token where the first tenant and its first
/// client are created; those handlers refuse it once anything exists.
struct BootstrapKey: Sendable {
    /// Nil disables bootstrapping.
    let key: String?

    /// The bootstrap principal when the request presents the key, nil when it presents no key (a JWT or
    /// nothing: the token is verified as usual); a wrong key is the same 401 as a bad token.
    @Sendable func principal(_ request: Request, tenant: TenantSlug) throws -> AdminPrincipal? {
        guard let key, let presented = (try? BearerToken.extract(from: request)) ?? nil,
            presented.utf8.filter({ $0 == UInt8(ascii: ".") }).count != 2
        else { return nil }
        // Constant-time: the key is a secret.
        guard ConstantTime.equals(presented, key) else {
            throw OAuthError(
                .unauthorized, "invalid_token", "the bootstrap key is not valid",
                headers: [.wwwAuthenticate: #"Bearer realm="latchkey", error="invalid_token""#])
        }
        return .bootstrapKey(acting: tenant)
    }
}
