import Foundation
import LatchkeyCore
import LatchkeyServer

/// The parameters of an upstream authorization response, from the query or from a `form_post`.
struct UpstreamAuthorizationResponse: Codable, Sendable {
    var state: String?
    var code: String?
    var error: String?
    /// Sign in with Apple's `user` member: JSON with the user's name, sent once, on the first sign-in.
    var user: String?

    init(state: String?, code: String?, error: String?, user: String?) {
        self.state = state
        self.code = code
        self.error = error
        self.user = user
    }

    init(_ parameters: FormParameters) throws(OAuthError) {
        func bounded(_ name: String, _ limit: Int) throws(OAuthError) -> String? {
            guard let value = parameters[name] else { return nil }
            guard value.utf8.count <= limit else { throw OAuthError.invalidRequest("\(name) is too long") }
            return value
        }
        state = try bounded("state", 512)
        code = try bounded("code", 2048)
        error = try bounded("error", 256)
        user = try bounded("user", 2048)
    }

    /// The name in Apple's `user` JSON (`{"name": {"firstName": …, "lastName": …}}`), at most 200
    /// characters without control characters; nil when absent or unusable. It is unsigned, so it only
    /// ever names a new account, never identifies one.
    var userName: String? {
        struct AppleUser: Decodable {
            struct Name: Decodable {
                let firstName: String?
                let lastName: String?
            }
            let name: Name?
        }
        guard let user, let parsed = try? StrictJSONParser.decode(AppleUser.self, from: Array(user.utf8)),
            let name = parsed.name
        else { return nil }
        let joined = [name.firstName, name.lastName].compactMap { $0?.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        guard !joined.isEmpty, joined.count <= 200,
            !joined.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return joined
    }
}

/// A `form_post` response on its way from the provider's cross-site POST to a GET on our origin.
///
/// The `latchkey_federation` cookie is SameSite=Lax, so the browser leaves it off a cross-site POST; it
/// does send it on a top-level GET navigation. The POST callback therefore seals what the provider sent
/// (AES-GCM, tenant as associated data, one minute of life) and answers 303 to the GET callback with
/// that opaque value. The state check against the cookie happens there, exactly as for `query`
/// responses, so the browser binding that stops login CSRF is unchanged, and the cookie can stay Lax
/// (no SameSite=None cookie riding along on every cross-site request).
struct FormPostHandoff: Codable, Sendable {
    var provider: String
    var response: UpstreamAuthorizationResponse
    var expiresAt: Date

    static let lifetime: TimeInterval = 60
    static let parameter = "form_post"

    enum CodingKeys: String, CodingKey {
        case provider, response
        case expiresAt = "exp"
    }
}
