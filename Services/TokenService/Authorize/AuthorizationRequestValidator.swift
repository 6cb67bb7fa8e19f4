import Foundation
import LatchkeyCore
import LatchkeyServer

/// Checks an authorization request in the order RFC 6749 §4.1.2.1 demands: client and redirect URI
/// first (failures there must never redirect), then everything else (failures redirect with `error`).
struct AuthorizationRequestValidator: Sendable {
    /// Bounds on parameters; longer values are refused rather than stored or reflected.
    enum Limits {
        static let clientID = 255
        static let redirectURI = 2048
        static let state = 1024
        static let nonce = 512
        static let scope = 1024
    }

    /// Lifetime of a sealed pending request (the time a user has to sign in or sign up).
    static let pendingLifetime: TimeInterval = 600

    let tenant: ResolvedTenant
    let issuer: String

    /// Step 1 (pre-redirect): the client exists, is active, may use the code flow, and the redirect URI is registered.
    func verifyClientAndRedirect(_ form: FormParameters, client: StoredClient?) throws(AuthorizeFailure)
        -> (StoredClient, AuthorizationResponseTarget)
    {
        guard let clientID = form["client_id"] else { throw .page("The request has no client_id.") }
        guard clientID.count <= Limits.clientID, let client, client.clientID == clientID, client.isUsable(at: Date())
        else { throw .page("The application that sent you here is not registered or no longer active.") }
        guard let redirectURI = form["redirect_uri"] else { throw .page("The request has no redirect_uri.") }
        guard redirectURI.utf8.count <= Limits.redirectURI,
            RedirectURIMatcher.matches(requested: redirectURI, registered: client.metadata.redirectURIs ?? [])
        else { throw .page("The redirect URI is not registered for this application.") }
        // A state we would refuse to echo is dropped from the error response rather than reflected.
        let state = form["state"].flatMap { $0.utf8.count <= Limits.state ? $0 : nil }
        return (client, AuthorizationResponseTarget(redirectURI: redirectURI, state: state, issuer: issuer))
    }

    /// Step 2 (post-redirect): everything else; failures become error redirects to `target`.
    func validate(_ form: FormParameters, client: StoredClient, target: AuthorizationResponseTarget)
        throws(AuthorizeFailure) -> AuthorizationRequest
    {
        func fail(_ error: String, _ description: String) -> AuthorizeFailure {
            .redirect(target, error: error, description: description)
        }
        if form["request"] != nil { throw fail("request_not_supported", "request objects are not supported") }
        if form["request_uri"] != nil { throw fail("request_uri_not_supported", "request_uri is not supported") }
        if let state = form["state"], state.utf8.count > Limits.state {
            throw fail("invalid_request", "state is longer than \(Limits.state) bytes")
        }
        guard let responseType = form["response_type"] else {
            throw fail("invalid_request", "response_type is required")
        }
        guard responseType == "code" else {
            throw fail("unsupported_response_type", "only response_type=code is supported")
        }
        if let mode = form["response_mode"], mode != "query" {
            throw fail("invalid_request", "only response_mode=query is supported")
        }
        guard client.grantTypes.contains(.authorizationCode) else {
            throw fail("unauthorized_client", "the client may not use the authorization code flow")
        }
        let scope = try checkScope(form["scope"], client: client, fail: fail)
        let (challenge, method) = try checkPKCE(form, client: client, fail: fail)
        let prompt = try checkPrompt(form["prompt"], fail: fail)
        if let nonce = form["nonce"], nonce.utf8.count > Limits.nonce {
            throw fail("invalid_request", "nonce is longer than \(Limits.nonce) bytes")
        }
        if let jkt = form["dpop_jkt"], !Self.isThumbprint(jkt) {
            throw fail("invalid_request", "dpop_jkt must be a base64url SHA-256 JWK thumbprint")
        }
        return AuthorizationRequest(
            clientID: client.clientID, redirectURI: target.redirectURI, scope: scope, state: target.state,
            nonce: form["nonce"], codeChallenge: challenge, codeChallengeMethod: method, dpopJKT: form["dpop_jkt"],
            forceLogin: prompt.contains("login"), forceConsent: prompt.contains("consent") ? true : nil,
            expiresAt: Date().addingTimeInterval(Self.pendingLifetime))
    }

    /// The requested scope must be a subset of the client's registered scope; absent means all of it.
    private func checkScope(_ requested: String?, client: StoredClient, fail: (String, String) -> AuthorizeFailure)
        throws(AuthorizeFailure) -> String
    {
        // `admin` never goes through a user's authorization: admin tokens come from client credentials only.
        let admin = AdminTokenVerifier.requiredScope
        let registered = client.registeredScopes.filter { $0 != admin }
        guard let requested else {
            guard !registered.isEmpty else { throw fail("invalid_scope", "scope is required") }
            return registered.joined(separator: " ")
        }
        guard requested.utf8.count <= Limits.scope else { throw fail("invalid_scope", "scope is too long") }
        let tokens = TenantPolicy.scopeTokens(requested)
        guard !tokens.isEmpty, tokens.allSatisfy(TenantPolicy.isScopeToken) else {
            throw fail("invalid_scope", "scope is malformed")
        }
        guard !tokens.contains(admin) else {
            throw fail("invalid_scope", "the admin scope is issued by the client_credentials grant only")
        }
        guard Set(tokens).isSubset(of: registered) else {
            throw fail("invalid_scope", "the client may not request this scope")
        }
        return tokens.joined(separator: " ")
    }

    /// RFC 7636 §4.3–4.4: absent method means `plain`, which only a policy allowing it accepts.
    private func checkPKCE(_ form: FormParameters, client: StoredClient, fail: (String, String) -> AuthorizeFailure)
        throws(AuthorizeFailure) -> (String?, String?)
    {
        guard let challenge = form["code_challenge"] else {
            if form["code_challenge_method"] != nil {
                throw fail("invalid_request", "code_challenge_method without code_challenge")
            }
            let required = tenant.policy.pkce.isRequired(
                clientType: client.clientType, applicationType: client.applicationType)
            if required { throw fail("invalid_request", "code_challenge is required (PKCE, RFC 7636)") }
            return (nil, nil)
        }
        let method = form["code_challenge_method"] ?? "plain"
        guard tenant.policy.pkce.challengeMethods.contains(method) else {
            throw fail("invalid_request", "code_challenge_method must be S256")
        }
        let unreserved = challenge.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || $0 == 0x7E
        }
        let lengthOK = method == "S256" ? challenge.utf8.count == 43 : (43...128).contains(challenge.utf8.count)
        guard unreserved, lengthOK else { throw fail("invalid_request", "code_challenge is malformed") }
        return (challenge, method)
    }

    /// OIDC Core §3.1.2.1: `none` stands alone; `login` forces a sign-in; `consent` forces the consent
    /// page; `select_account` is accepted (there is no account chooser to skip).
    private func checkPrompt(_ prompt: String?, fail: (String, String) -> AuthorizeFailure) throws(AuthorizeFailure)
        -> Set<String>
    {
        guard let prompt else { return [] }
        let values = Set(prompt.split(separator: " ").map(String.init))
        guard !values.isEmpty, values.isSubset(of: ["none", "login", "consent", "select_account"]) else {
            throw fail("invalid_request", "prompt has an unsupported value")
        }
        if values.contains("none"), values.count > 1 {
            throw fail("invalid_request", "prompt=none cannot be combined with other values")
        }
        return values
    }

    /// Whether `prompt=none` was asked (the caller checks it against the session).
    static func isPromptNone(_ form: FormParameters) -> Bool { form["prompt"] == "none" }

    /// A base64url SHA-256 thumbprint: 43 characters of the base64url alphabet.
    static func isThumbprint(_ value: String) -> Bool {
        value.utf8.count == 43 && Base64URL.decodeBytes(Array(value.utf8))?.count == 32
    }
}
