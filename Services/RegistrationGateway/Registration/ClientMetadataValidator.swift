import Foundation
import LatchkeyCore

/// RFC 7591 §2 metadata checks (with the RFC 8252 rules for native apps) under a tenant policy; returns the metadata to store,
/// RFC 7591 defaults filled in.
struct ClientMetadataValidator: Sendable {
    static let maximumNameLength = 256
    static let maximumURILength = 2048
    static let maximumScopeLength = 1024
    static let maximumContacts = 10
    static let maximumContactLength = 320
    static let maximumIdentifierLength = 256
    static let maximumJWKSKeys = 10

    let policy: TenantPolicy

    func validate(_ request: ClientMetadata) throws -> ClientMetadata {
        var metadata = request
        metadata.softwareStatement = nil
        let applicationType = request.applicationType ?? .native
        metadata.applicationType = applicationType
        try validateTypes(&metadata, applicationType: applicationType)
        try validateAuthentication(metadata)
        try validateRedirects(metadata, applicationType: applicationType)
        try validateStrings(metadata)
        try validateScope(&metadata)
        if policy.dpop.isRequired(clientRequestsBinding: metadata.dpopBoundAccessTokens) {
            metadata.dpopBoundAccessTokens = true
        } else if metadata.dpopBoundAccessTokens == nil {
            metadata.dpopBoundAccessTokens = false
        }
        return metadata
    }

    /// Grant and response types must agree (RFC 7591 §2.1); implicit is never registrable here.
    private func validateTypes(_ metadata: inout ClientMetadata, applicationType: ApplicationType) throws {
        metadata.tokenEndpointAuthMethod = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
        switch (metadata.grantTypes, metadata.responseTypes) {
        case (nil, nil):
            metadata.grantTypes = [.authorizationCode]
            metadata.responseTypes = [.code]
        case (let grants?, nil):
            metadata.responseTypes = grants.compactMap(\.correspondingResponseType)
        case (nil, let responses?):
            metadata.grantTypes = responses.map(\.correspondingGrantType)
        case (_?, _?):
            break
        }
        let grants = deduplicated(metadata.grantTypes ?? [])
        let responses = deduplicated(metadata.responseTypes ?? [])
        metadata.grantTypes = grants
        metadata.responseTypes = responses
        guard !grants.isEmpty else { throw RegistrationError.invalidMetadata("grant_types must not be empty") }
        if grants.contains(.implicit) || responses.contains(.token) {
            throw RegistrationError.invalidMetadata(
                applicationType == .native
                    ? "the implicit grant is not allowed for native clients (RFC 8252 §8.2)"
                    : "the implicit grant is not supported; use authorization_code with PKCE")
        }
        for grant in grants where !policy.allowedGrantTypes.contains(grant) {
            throw RegistrationError.invalidMetadata("grant type \(grant.rawValue) is not allowed by the tenant policy")
        }
        for response in responses where !grants.contains(response.correspondingGrantType) {
            throw RegistrationError.invalidMetadata(
                "response type \(response.rawValue) needs grant type \(response.correspondingGrantType.rawValue)")
        }
        for grant in grants {
            if let response = grant.correspondingResponseType, !responses.contains(response) {
                throw RegistrationError.invalidMetadata(
                    "grant type \(grant.rawValue) needs response type \(response.rawValue)")
            }
        }
        if grants.contains(.refreshToken) && !grants.contains(.authorizationCode) {
            throw RegistrationError.invalidMetadata("refresh_token is only issued with authorization_code")
        }
    }

    private func validateAuthentication(_ metadata: ClientMetadata) throws {
        let method = metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
        if metadata.jwks != nil && metadata.jwksURI != nil {
            throw RegistrationError.invalidMetadata("send jwks or jwks_uri, not both (RFC 7591 §2)")
        }
        if method == .privateKeyJWT && metadata.jwks == nil && metadata.jwksURI == nil {
            throw RegistrationError.invalidMetadata("private_key_jwt needs jwks or jwks_uri")
        }
        if let jwks = metadata.jwks { try validateJWKS(jwks) }
        if let uri = metadata.jwksURI { try validateWebURI(uri, field: "jwks_uri") }
        if method == .noAuthentication, metadata.grantTypes?.contains(.clientCredentials) == true {
            throw RegistrationError.invalidMetadata("client_credentials needs an authenticated (confidential) client")
        }
    }

    /// An inline JWK Set of public keys: `{"keys": [{"kty": …}, …]}`, no private members.
    private func validateJWKS(_ jwks: JSONValue) throws {
        guard let keys = jwks["keys"]?.arrayValue, !keys.isEmpty, keys.count <= Self.maximumJWKSKeys else {
            throw RegistrationError.invalidMetadata("jwks must be a JWK Set with 1 to \(Self.maximumJWKSKeys) keys")
        }
        for key in keys {
            guard let members = key.objectValue else {
                throw RegistrationError.invalidMetadata("jwks must be a JWK Set with 1 to \(Self.maximumJWKSKeys) keys")
            }
            guard members["kty"]?.stringValue != nil else {
                throw RegistrationError.invalidMetadata("every jwks key needs kty")
            }
            guard !JWK.privateMemberKeys.contains(where: { members[$0] != nil }) else {
                throw RegistrationError.invalidMetadata("jwks must hold public keys only")
            }
        }
    }

    private func validateRedirects(_ metadata: ClientMetadata, applicationType: ApplicationType) throws {
        let redirects = metadata.redirectURIs ?? []
        if metadata.grantTypes?.contains(.authorizationCode) == true && redirects.isEmpty {
            throw RegistrationError.invalidRedirectURI("redirect_uris is required for the authorization_code grant")
        }
        try RedirectURIValidator.validate(redirects, field: "redirect_uris", applicationType: applicationType)
        if let logout = metadata.postLogoutRedirectURIs {
            try RedirectURIValidator.validate(
                logout, field: "post_logout_redirect_uris", applicationType: applicationType)
        }
    }

    private func validateStrings(_ metadata: ClientMetadata) throws {
        if let name = metadata.clientName {
            try bounded(name, field: "client_name", maximum: Self.maximumNameLength)
            guard
                !name.unicodeScalars.contains(where: {
                    $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
                })
            else {
                throw RegistrationError.invalidMetadata("client_name must not contain control or formatting characters")
            }
        }
        for (value, field) in [
            (metadata.clientURI, "client_uri"), (metadata.logoURI, "logo_uri"),
            (metadata.tosURI, "tos_uri"), (metadata.policyURI, "policy_uri"),
        ] {
            if let value { try validateWebURI(value, field: field) }
        }
        if let contacts = metadata.contacts {
            guard contacts.count <= Self.maximumContacts else {
                throw RegistrationError.invalidMetadata("contacts may hold at most \(Self.maximumContacts) entries")
            }
            for contact in contacts { try bounded(contact, field: "contacts", maximum: Self.maximumContactLength) }
        }
        if let id = metadata.softwareID { try bounded(id, field: "software_id", maximum: Self.maximumIdentifierLength) }
        if let version = metadata.softwareVersion {
            try bounded(version, field: "software_version", maximum: Self.maximumIdentifierLength)
        }
    }

    /// Requested scopes against the policy (reject or trim); absent means every allowed scope.
    private func validateScope(_ metadata: inout ClientMetadata) throws {
        if let scope = metadata.scope {
            try bounded(scope, field: "scope", maximum: Self.maximumScopeLength, allowEmpty: true)
            guard
                scope.unicodeScalars.allSatisfy({
                    $0 == " " || (0x21...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\"
                })
            else {
                throw RegistrationError.invalidMetadata("scope tokens must be printable ASCII (RFC 6749 §3.3)")
            }
            switch policy.decideScopes(requested: scope) {
            case .rejected(let disallowed):
                throw RegistrationError.invalidMetadata("scope not allowed: \(disallowed.joined(separator: " "))")
            case .granted(let scopes), .trimmed(let scopes, _):
                metadata.scope = scopes.joined(separator: " ")
            }
        } else {
            metadata.scope = policy.allowedScopes.filter { !TenantPolicy.reservedScopes.contains($0) }.joined(
                separator: " ")
        }
    }

    private func validateWebURI(_ value: String, field: String) throws {
        try bounded(value, field: field, maximum: Self.maximumURILength)
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), let components = URLComponents(string: value),
            components.scheme?.lowercased() == "https", components.host?.isEmpty == false
        else { throw RegistrationError.invalidMetadata("\(field) must be an absolute https URI") }
    }

    private func bounded(_ value: String, field: String, maximum: Int, allowEmpty: Bool = false) throws {
        guard allowEmpty || !value.isEmpty, value.count <= maximum, value.utf8.count <= maximum * 4 else {
            throw RegistrationError.invalidMetadata("\(field) must have \(allowEmpty ? 0 : 1) to \(maximum) characters")
        }
    }

    private func deduplicated<T: Hashable>(_ values: [T]) -> [T] {
        var seen: Set<T> = []
        return values.filter { seen.insert($0).inserted }
    }
}
