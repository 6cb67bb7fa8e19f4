import Foundation

/// A validated authorization request (RFC 6749 §4.1.1 + PKCE, OIDC `nonce`/`prompt`, RFC 9449 `dpop_jkt`).
/// It travels between `/authorize` and the sign-in pages sealed (``PendingAuthorizationSealer``).
struct AuthorizationRequest: Codable, Sendable, Equatable {
    var clientID: String
    var redirectURI: String
    var scope: String
    var state: String?
    var nonce: String?
    var codeChallenge: String?
    var codeChallengeMethod: String?
    var dpopJKT: String?
    /// `prompt=login`: a sign-in is required even with a session.
    var forceLogin: Bool
    /// `prompt=consent`: the consent page is shown even when consent is remembered or not needed.
    var forceConsent: Bool?
    /// On the consent page: the signed-in user it was shown to (only that user's answer counts).
    var consentUser: UUID?
    /// Sealed requests expire (the sign-in page must not live forever).
    var expiresAt: Date
    /// A sign-in started on the account pages themselves, with no application: after it the browser returns
    /// to this page instead of an application's redirect URI.
    var accountPage: AccountPage?

    /// The account pages a sign-in may return to; a fixed set, so the return is never an open redirect.
    enum AccountPage: String, Codable, Sendable {
        case devices = "account"
        case password = "account/password"
    }

    /// A sign-in for `page` of the account pages: no client, no code, no consent.
    static func accountSignIn(returningTo page: AccountPage) -> AuthorizationRequest {
        AuthorizationRequest(
            clientID: "", redirectURI: "", scope: "", forceLogin: false,
            expiresAt: Date().addingTimeInterval(AuthorizationRequestValidator.pendingLifetime), accountPage: page)
    }

    /// The client the sign-in is for; nil for a sign-in on the account pages.
    var client: String? { accountPage == nil ? clientID : nil }

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case redirectURI = "redirect_uri"
        case scope, state, nonce
        case codeChallenge = "code_challenge"
        case codeChallengeMethod = "code_challenge_method"
        case dpopJKT = "dpop_jkt"
        case forceLogin = "force_login"
        case forceConsent = "force_consent"
        case consentUser = "consent_user"
        case expiresAt = "exp"
        case accountPage = "account_page"
    }
}

/// Why `/authorize` failed: before the redirect URI is trusted (an HTML page) or after (a redirect).
enum AuthorizeFailure: Error {
    /// The client or redirect URI cannot be trusted: answered with an HTML page, never a redirect.
    case page(String)
    /// RFC 6749 §4.1.2.1 error response to the verified redirect URI.
    case redirect(AuthorizationResponseTarget, error: String, description: String)
}

/// Where an authorization response goes: the verified redirect URI, the client's `state`, our `iss`.
struct AuthorizationResponseTarget: Sendable {
    let redirectURI: String
    let state: String?
    let issuer: String

    /// The redirect URI with `parameters`, `state` and `iss` (RFC 9207) appended to its query.
    func url(_ parameters: [(String, String)]) -> String {
        var all = parameters
        if let state { all.append(("state", state)) }
        all.append(("iss", issuer))
        let query = all.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        let separator = redirectURI.contains("?") ? "&" : "?"
        return redirectURI + separator + query
    }

    private static let allowed: CharacterSet = {
        var set = CharacterSet.alphanumerics.intersection(
            CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        set.insert(charactersIn: "-._~")
        return set
    }()

    static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
