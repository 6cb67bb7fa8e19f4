import Foundation

/// Client metadata of RFC 7591 §2 (plus `application_type`, `dpop_bound_access_tokens` and
/// `post_logout_redirect_uris`), as sent to and returned by the registration endpoint.
///
/// Every member is optional because absence matters: the gateway fills RFC 7591 defaults (see
/// `applyingDefaults()`) and a template decides which sent members may override it. Members this
/// type does not know are ignored on decode, as RFC 7591 §2 requires. URIs stay strings: the
/// gateway validates them with the RFC 8252 rules and must be able to echo exactly what was sent.
public struct ClientMetadata: Codable, Sendable, Hashable {
    public var redirectURIs: [String]?
    public var tokenEndpointAuthMethod: TokenEndpointAuthMethod?
    public var grantTypes: [GrantType]?
    public var responseTypes: [ResponseType]?
    public var clientName: String?
    public var clientURI: String?
    public var logoURI: String?
    /// Space-separated scope tokens.
    public var scope: String?
    public var contacts: [String]?
    public var tosURI: String?
    public var policyURI: String?
    public var jwksURI: String?
    /// An inline JWK Set, kept as raw JSON so no key member is lost.
    public var jwks: JSONValue?
    public var softwareID: String?
    public var softwareVersion: String?
    public var applicationType: ApplicationType?
    /// RFC 9449 §5.2: every access token of this client must be DPoP-bound.
    public var dpopBoundAccessTokens: Bool?
    /// RFC 7591 §2.3 signed statement. Input only: it is decoded but never encoded, because its
    /// claims are merged into the metadata that gets stored and emitted; the registration
    /// response echoes the original value itself (RFC 7591 §3.2.1).
    public var softwareStatement: String?
    public var postLogoutRedirectURIs: [String]?

    public init(
        redirectURIs: [String]? = nil,
        tokenEndpointAuthMethod: TokenEndpointAuthMethod? = nil,
        grantTypes: [GrantType]? = nil,
        responseTypes: [ResponseType]? = nil,
        clientName: String? = nil,
        clientURI: String? = nil,
        logoURI: String? = nil,
        scope: String? = nil,
        contacts: [String]? = nil,
        tosURI: String? = nil,
        policyURI: String? = nil,
        jwksURI: String? = nil,
        jwks: JSONValue? = nil,
        softwareID: String? = nil,
        softwareVersion: String? = nil,
        applicationType: ApplicationType? = nil,
        dpopBoundAccessTokens: Bool? = nil,
        softwareStatement: String? = nil,
        postLogoutRedirectURIs: [String]? = nil
    ) {
        self.redirectURIs = redirectURIs
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.grantTypes = grantTypes
        self.responseTypes = responseTypes
        self.clientName = clientName
        self.clientURI = clientURI
        self.logoURI = logoURI
        self.scope = scope
        self.contacts = contacts
        self.tosURI = tosURI
        self.policyURI = policyURI
        self.jwksURI = jwksURI
        self.jwks = jwks
        self.softwareID = softwareID
        self.softwareVersion = softwareVersion
        self.applicationType = applicationType
        self.dpopBoundAccessTokens = dpopBoundAccessTokens
        self.softwareStatement = softwareStatement
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case redirectURIs = "redirect_uris"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method"
        case grantTypes = "grant_types"
        case responseTypes = "response_types"
        case clientName = "client_name"
        case clientURI = "client_uri"
        case logoURI = "logo_uri"
        case scope
        case contacts
        case tosURI = "tos_uri"
        case policyURI = "policy_uri"
        case jwksURI = "jwks_uri"
        case jwks
        case softwareID = "software_id"
        case softwareVersion = "software_version"
        case applicationType = "application_type"
        case dpopBoundAccessTokens = "dpop_bound_access_tokens"
        case softwareStatement = "software_statement"
        case postLogoutRedirectURIs = "post_logout_redirect_uris"
    }

    /// Every member name this type understands, e.g. to check a template's `overridable_fields`.
    public static var fieldNames: [String] { CodingKeys.allCases.map(\.stringValue) }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        redirectURIs = try c.decodeIfPresent([String].self, forKey: .redirectURIs)
        tokenEndpointAuthMethod = try c.decodeIfPresent(TokenEndpointAuthMethod.self, forKey: .tokenEndpointAuthMethod)
        grantTypes = try c.decodeIfPresent([GrantType].self, forKey: .grantTypes)
        responseTypes = try c.decodeIfPresent([ResponseType].self, forKey: .responseTypes)
        clientName = try c.decodeIfPresent(String.self, forKey: .clientName)
        clientURI = try c.decodeIfPresent(String.self, forKey: .clientURI)
        logoURI = try c.decodeIfPresent(String.self, forKey: .logoURI)
        scope = try c.decodeIfPresent(String.self, forKey: .scope)
        contacts = try c.decodeIfPresent([String].self, forKey: .contacts)
        tosURI = try c.decodeIfPresent(String.self, forKey: .tosURI)
        policyURI = try c.decodeIfPresent(String.self, forKey: .policyURI)
        jwksURI = try c.decodeIfPresent(String.self, forKey: .jwksURI)
        // `"jwks": null` means absent, not a JSON null key set.
        jwks = try c.decodeIfPresent(JSONValue.self, forKey: .jwks).flatMap { $0.isNull ? nil : $0 }
        softwareID = try c.decodeIfPresent(String.self, forKey: .softwareID)
        softwareVersion = try c.decodeIfPresent(String.self, forKey: .softwareVersion)
        applicationType = try c.decodeIfPresent(ApplicationType.self, forKey: .applicationType)
        dpopBoundAccessTokens = try c.decodeIfPresent(Bool.self, forKey: .dpopBoundAccessTokens)
        softwareStatement = try c.decodeIfPresent(String.self, forKey: .softwareStatement)
        postLogoutRedirectURIs = try c.decodeIfPresent([String].self, forKey: .postLogoutRedirectURIs)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(redirectURIs, forKey: .redirectURIs)
        try c.encodeIfPresent(tokenEndpointAuthMethod, forKey: .tokenEndpointAuthMethod)
        try c.encodeIfPresent(grantTypes, forKey: .grantTypes)
        try c.encodeIfPresent(responseTypes, forKey: .responseTypes)
        try c.encodeIfPresent(clientName, forKey: .clientName)
        try c.encodeIfPresent(clientURI, forKey: .clientURI)
        try c.encodeIfPresent(logoURI, forKey: .logoURI)
        try c.encodeIfPresent(scope, forKey: .scope)
        try c.encodeIfPresent(contacts, forKey: .contacts)
        try c.encodeIfPresent(tosURI, forKey: .tosURI)
        try c.encodeIfPresent(policyURI, forKey: .policyURI)
        try c.encodeIfPresent(jwksURI, forKey: .jwksURI)
        try c.encodeIfPresent(jwks, forKey: .jwks)
        try c.encodeIfPresent(softwareID, forKey: .softwareID)
        try c.encodeIfPresent(softwareVersion, forKey: .softwareVersion)
        try c.encodeIfPresent(applicationType, forKey: .applicationType)
        try c.encodeIfPresent(dpopBoundAccessTokens, forKey: .dpopBoundAccessTokens)
        try c.encodeIfPresent(postLogoutRedirectURIs, forKey: .postLogoutRedirectURIs)
    }

    /// The metadata with RFC 7591 §2 defaults filled in where absent: `client_secret_basic`,
    /// `["authorization_code"]`, `["code"]`, and `native` (the default for dynamic registration: every instance is an app).
    public func applyingDefaults() -> ClientMetadata {
        var filled = self
        filled.tokenEndpointAuthMethod = tokenEndpointAuthMethod ?? .clientSecretBasic
        filled.grantTypes = grantTypes ?? [.authorizationCode]
        filled.responseTypes = responseTypes ?? [.code]
        filled.applicationType = applicationType ?? .native
        return filled
    }

    /// The metadata with every member present in `claims` taken from there: a software
    /// statement's claims win over the same members sent in the request (RFC 7591 §3.1).
    public func overridden(by claims: ClientMetadata) -> ClientMetadata {
        var merged = self
        for key in CodingKeys.allCases where claims.hasMember(key) {
            merged.copyMember(key, from: claims)
        }
        return merged
    }

    /// Public or confidential, from the (defaulted) token endpoint auth method.
    public var clientType: ClientType {
        (tokenEndpointAuthMethod ?? .clientSecretBasic).clientType
    }

    /// Names of the members that are present, as their JSON keys (a sent `software_statement` included).
    public var presentFieldNames: Set<String> {
        Set(CodingKeys.allCases.filter(hasMember).map(\.stringValue))
    }

    // Exhaustive switches, so a member added to CodingKeys cannot be forgotten here.
    func hasMember(_ key: CodingKeys) -> Bool {
        switch key {
        case .redirectURIs: return redirectURIs != nil
        case .tokenEndpointAuthMethod: return tokenEndpointAuthMethod != nil
        case .grantTypes: return grantTypes != nil
        case .responseTypes: return responseTypes != nil
        case .clientName: return clientName != nil
        case .clientURI: return clientURI != nil
        case .logoURI: return logoURI != nil
        case .scope: return scope != nil
        case .contacts: return contacts != nil
        case .tosURI: return tosURI != nil
        case .policyURI: return policyURI != nil
        case .jwksURI: return jwksURI != nil
        case .jwks: return jwks != nil
        case .softwareID: return softwareID != nil
        case .softwareVersion: return softwareVersion != nil
        case .applicationType: return applicationType != nil
        case .dpopBoundAccessTokens: return dpopBoundAccessTokens != nil
        case .softwareStatement: return softwareStatement != nil
        case .postLogoutRedirectURIs: return postLogoutRedirectURIs != nil
        }
    }

    /// Sets the member named by `key` to its value in `other` (absent stays absent).
    mutating func copyMember(_ key: CodingKeys, from other: ClientMetadata) {
        switch key {
        case .redirectURIs: redirectURIs = other.redirectURIs
        case .tokenEndpointAuthMethod: tokenEndpointAuthMethod = other.tokenEndpointAuthMethod
        case .grantTypes: grantTypes = other.grantTypes
        case .responseTypes: responseTypes = other.responseTypes
        case .clientName: clientName = other.clientName
        case .clientURI: clientURI = other.clientURI
        case .logoURI: logoURI = other.logoURI
        case .scope: scope = other.scope
        case .contacts: contacts = other.contacts
        case .tosURI: tosURI = other.tosURI
        case .policyURI: policyURI = other.policyURI
        case .jwksURI: jwksURI = other.jwksURI
        case .jwks: jwks = other.jwks
        case .softwareID: softwareID = other.softwareID
        case .softwareVersion: softwareVersion = other.softwareVersion
        case .applicationType: applicationType = other.applicationType
        case .dpopBoundAccessTokens: dpopBoundAccessTokens = other.dpopBoundAccessTokens
        case .softwareStatement: softwareStatement = other.softwareStatement
        case .postLogoutRedirectURIs: postLogoutRedirectURIs = other.postLogoutRedirectURIs
        }
    }
}
