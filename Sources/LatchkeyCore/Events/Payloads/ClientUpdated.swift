import Foundation

/// A client's metadata or credentials changed (RFC 7592 PUT, admin edit, secret rotation, or a
/// template change reaching its instances). Names what changed, not the new credentials.
public struct ClientUpdated: EventPayload, Hashable {
    public static var eventType: LatchkeyEventType { .clientUpdated }

    public var tenant: TenantSlug
    public var clientID: String
    /// JSON names of the metadata members whose value changed, sorted.
    public var changedFields: [String]
    /// A new client secret was issued.
    public var secretRotated: Bool
    /// A new registration access token was issued (policy `rotate_registration_access_token`).
    public var registrationTokenRotated: Bool
    public var authenticatedUser: UUID?
    public var templateID: String?
    /// The template version the client now follows, when the change came from its template.
    public var templateVersion: Int?
    public var actor: EventActor

    public var eventSubject: String { clientID }

    public init(
        tenant: TenantSlug,
        clientID: String,
        changedFields: [String],
        secretRotated: Bool = false,
        registrationTokenRotated: Bool = false,
        authenticatedUser: UUID? = nil,
        templateID: String? = nil,
        templateVersion: Int? = nil,
        actor: EventActor
    ) {
        self.tenant = tenant
        self.clientID = clientID
        self.changedFields = changedFields.sorted()
        self.secretRotated = secretRotated
        self.registrationTokenRotated = registrationTokenRotated
        self.authenticatedUser = authenticatedUser
        self.templateID = templateID
        self.templateVersion = templateVersion
        self.actor = actor
    }

    /// Members whose value differs between two versions of a client's metadata.
    public static func changedFields(from old: ClientMetadata, to new: ClientMetadata) -> [String] {
        ClientMetadata.CodingKeys.allCases
            .filter { key in
                var probe = old
                probe.copyMember(key, from: new)
                return probe != old
            }
            .map(\.stringValue)
            .sorted()
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case tenant
        case clientID = "client_id"
        case changedFields = "changed_fields"
        case secretRotated = "secret_rotated"
        case registrationTokenRotated = "registration_token_rotated"
        case authenticatedUser = "authenticated_user"
        case templateID = "template_id"
        case templateVersion = "template_version"
        case actor
    }
}
