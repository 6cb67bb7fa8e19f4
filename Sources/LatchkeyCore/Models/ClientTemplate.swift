import Foundation

/// A template client: instances registered with its `software_id` copy its metadata, and may
/// override only the members it lists (templatized dynamic registration).
public struct ClientTemplate: Codable, Sendable, Hashable, Identifiable {
    /// Members a registration may always send alongside `software_id`: they identify the
    /// software rather than change the client.
    public static let alwaysAcceptedFields: Set<String> = ["software_id", "software_version", "software_statement"]

    /// The `software_id` registrations name.
    public var id: String
    public var tenant: TenantSlug
    public var metadata: ClientMetadata
    /// JSON member names of `ClientMetadata` an instance may set itself, e.g. `["client_name"]`.
    public var overridableFields: [String]
    /// Incremented on every change; instances follow the current version.
    public var version: Int

    public init(
        id: String, tenant: TenantSlug, metadata: ClientMetadata, overridableFields: [String] = [], version: Int = 1
    ) {
        self.id = id
        self.tenant = tenant
        self.metadata = metadata
        self.overridableFields = overridableFields
        self.version = version
    }

    enum CodingKeys: String, CodingKey {
        case id
        case tenant
        case metadata
        case overridableFields = "overridable_fields"
        case version
    }

    /// Entries of `overridableFields` that are not client metadata members (a template to refuse).
    public var unknownOverridableFields: [String] {
        let known = Set(ClientMetadata.fieldNames)
        return overridableFields.filter { !known.contains($0) }
    }

    /// Members sent in `request` that this template does not let an instance set.
    public func disallowedOverrides(in request: ClientMetadata) -> [String] {
        let allowed = Set(overridableFields).union(Self.alwaysAcceptedFields)
        return request.presentFieldNames.subtracting(allowed).sorted()
    }

    /// The metadata of a new instance: the template's, with the sent overridable members
    /// applied and `software_id` set to the template's id.
    public func instanceMetadata(for request: ClientMetadata) throws(ClientTemplateError) -> ClientMetadata {
        let refused = disallowedOverrides(in: request)
        guard refused.isEmpty else { throw .notOverridable(refused) }
        if let softwareID = request.softwareID, softwareID != id { throw .softwareIDMismatch(softwareID) }
        var merged = metadata
        let sent = request.presentFieldNames
        for key in ClientMetadata.CodingKeys.allCases where sent.contains(key.stringValue) {
            if key == .softwareStatement || key == .softwareID { continue }
            merged.copyMember(key, from: request)
        }
        merged.softwareID = id
        return merged
    }
}

extension ClientTemplate {
    /// The members of a registration request an instance keeps as its own when its template
    /// changes later: everything sent except `software_id` and `software_statement`.
    public static func instanceOverrides(from request: ClientMetadata) -> ClientMetadata {
        var overrides = request
        overrides.softwareID = nil
        overrides.softwareStatement = nil
        return overrides
    }

    /// `overrides` without the members this template does not (or no longer) let an instance set;
    /// `software_version` always stays.
    public func allowedOverrides(_ overrides: ClientMetadata) -> ClientMetadata {
        let allowed = Set(overridableFields).union(Self.alwaysAcceptedFields)
        var kept = Self.instanceOverrides(from: overrides)
        for key in ClientMetadata.CodingKeys.allCases where !allowed.contains(key.stringValue) {
            kept.copyMember(key, from: ClientMetadata())
        }
        return kept
    }
}

/// Why a registration against a template was refused (`invalid_client_metadata`).
public enum ClientTemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request set members the template does not mark overridable.
    case notOverridable([String])
    /// The request's `software_id` names another template.
    case softwareIDMismatch(String)

    public var description: String {
        switch self {
        case .notOverridable(let fields):
            return "the template does not allow setting: \(fields.joined(separator: ", "))"
        case .softwareIDMismatch(let softwareID):
            return "software_id \"\(softwareID)\" does not name this template"
        }
    }
}
