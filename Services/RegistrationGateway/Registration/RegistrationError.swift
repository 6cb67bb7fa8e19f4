import HTTPTypes
import LatchkeyServer

/// The RFC 7591 §3.2.2 errors of the registration endpoint.
enum RegistrationError {
    static func invalidRedirectURI(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_redirect_uri", description)
    }

    static func invalidMetadata(_ description: String) -> OAuthError {
        OAuthError(.badRequest, "invalid_client_metadata", description)
    }
}
