import Foundation

/// A client was registered (dynamically or by an administrator). Carries what an auditor needs
/// to know about the new client; its secret and registration access token never appear.
public struct ClientRegistered: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .clientRegistered }

    public var tenant: TenantSlug
    public var clientID: String
    public var clientName: String?
    public var applicationType: ApplicationType
    public var clientType: ClientType
    public var tokenEndpointAuthMethod: TokenEndpointAuthMethod
    public var grantTypes: [GrantType]
    public var redirectURIs: [String]
    /// The registered scope string; empty when the client registered none.
    public var scope: String
    public var softwareID: String?
    public var softwareVersion: String?
    /// The template this instance was made from.
    public var templateID: String?
    /// The user whose DCR token registered the instance.
    public var authenticatedUser: UUID?
    public var registrationMechanism: RegistrationMechanism
    public var dpopBoundAccessTokens: Bool
    /// `iss` of the software statement that was accepted, if one was sent.
    public var softwareStatementIssuer: String?
    /// When the issued client secret expires; absent when it never does or none was issued.
    public var secretExpiresAt: Date?
    public var actor: EventActor

    public var eventSubject: String { clientID }

    public init(
        tenant: TenantSlug,
        clientID: String,
        clientName: String? = nil,
        applicationType: ApplicationType,
        clientType: ClientType,
        tokenEndpointAuthMethod: TokenEndpointAuthMethod,
        grantTypes: [GrantType],
        redirectURIs: [String],
        scope: String,
        softwareID: String? = nil,
        softwareVersion: String? = nil,
        templateID: String? = nil,
        authenticatedUser: UUID? = nil,
        registrationMechanism: RegistrationMechanism,
        dpopBoundAccessTokens: Bool,
        softwareStatementIssuer: String? = nil,
        secretExpiresAt: Date? = nil,
        actor: EventActor
    ) {
        self.tenant = tenant
        self.clientID = clientID
        self.clientName = clientName
        self.applicationType = applicationType
        self.clientType = clientType
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.grantTypes = grantTypes
        self.redirectURIs = redirectURIs
        self.scope = scope
        self.softwareID = softwareID
        self.softwareVersion = softwareVersion
        self.templateID = templateID
        self.authenticatedUser = authenticatedUser
        self.registrationMechanism = registrationMechanism
        self.dpopBoundAccessTokens = dpopBoundAccessTokens
        self.softwareStatementIssuer = softwareStatementIssuer
        self.secretExpiresAt = secretExpiresAt.map(RFC3339Timestamp.normalized)
        self.actor = actor
    }

    /// The event for a freshly stored client, with RFC 7591 defaults applied to absent metadata.
    public init(record: ClientRecord, actor: EventActor, softwareStatementIssuer: String? = nil) {
        let metadata = record.metadata.applyingDefaults()
        self.init(
            tenant: record.tenant,
            clientID: record.clientID,
            clientName: metadata.clientName,
            applicationType: record.applicationType,
            clientType: record.clientType,
            tokenEndpointAuthMethod: metadata.tokenEndpointAuthMethod ?? .clientSecretBasic,
            grantTypes: metadata.grantTypes ?? [],
            redirectURIs: metadata.redirectURIs ?? [],
            scope: metadata.scope ?? "",
            softwareID: metadata.softwareID,
            softwareVersion: metadata.softwareVersion,
            templateID: record.templateID,
            authenticatedUser: record.authenticatedUser,
            registrationMechanism: record.registrationMechanism,
            dpopBoundAccessTokens: metadata.dpopBoundAccessTokens ?? false,
            softwareStatementIssuer: softwareStatementIssuer,
            secretExpiresAt: record.secretExpiresAt,
            actor: actor)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case clientID = "client_id"
        case clientName = "client_name"
        case applicationType = "application_type"
        case clientType = "client_type"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method"
        case grantTypes = "grant_types"
        case redirectURIs = "redirect_uris"
        case scope
        case softwareID = "software_id"
        case softwareVersion = "software_version"
        case templateID = "template_id"
        case authenticatedUser = "authenticated_user"
        case registrationMechanism = "registration_mechanism"
        case dpopBoundAccessTokens = "dpop_bound_access_tokens"
        case softwareStatementIssuer = "software_statement_issuer"
        case secretExpiresAt = "secret_expires_at"
        case actor
    }
}
