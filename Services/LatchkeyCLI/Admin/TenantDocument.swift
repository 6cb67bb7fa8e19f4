import ArgumentParser
import LatchkeyCore

/// A tenant's configuration as one JSON document for GitOps: its policy, templates and static clients,
/// never a secret (client secrets cannot be read back; the gateway seals upstream provider secrets).
///
/// ```json
/// {"format": "latchkey-tenant/v1", "tenant": {"tenant_id": "acme", "display_name": "Acme"},
///  "policy": {…}, "templates": [{"software_id": …, "metadata": {…}, "overridable_fields": […]}],
///  "clients": [{"client_name": …, …RFC 7591 metadata…, "first_party": false}]}
/// ```
/// Templates are sorted by `software_id`, clients by `client_name`, which identifies a static client on import.
struct TenantDocument: Equatable {
    static let format = "latchkey-tenant/v1"

    var tenantID: String
    var displayName: String?
    var policy: JSONValue
    var templates: [JSONValue]
    var clients: [JSONValue]

    var json: JSONValue {
        var tenant: [String: JSONValue] = ["tenant_id": .string(tenantID)]
        tenant["display_name"] = displayName.map(JSONValue.string)
        return [
            "format": .string(Self.format), "tenant": .object(tenant), "policy": policy,
            "templates": .array(templates), "clients": .array(clients),
        ]
    }

    /// Reads the tenant through the admin API: active static clients only (dynamic instances belong to their users).
    static func export(_ api: AdminAPI, tenant: String) async throws -> TenantDocument {
        let path = "/admin/tenants/\(AdminAPI.segment(tenant))"
        let view = try await api.get(path)
        let templates = try await api.get(path + "/templates")["templates"]?.arrayValue ?? []
        let summaries = try await ClientPages.collect(api, tenant: tenant, filters: [("status", "active")]) {
            $0["client_kind"]?.stringValue == "static"
        }
        var clients: [JSONValue] = []
        for summary in summaries {
            guard let id = summary["client_id"]?.stringValue else { continue }
            clients.append(ClientSpecification.of(try await api.get(path + "/clients/\(AdminAPI.segment(id))")))
        }
        return TenantDocument(
            tenantID: tenant, displayName: view["display_name"]?.stringValue, policy: view["policy"] ?? [:],
            templates: templates.map(Self.templateSpecification).sorted(by: Self.order("software_id")),
            clients: clients.sorted(by: Self.order("client_name")))
    }

    /// Parses and checks a document (format, members, unique template ids and client names).
    init(parsing json: JSONValue) throws {
        guard json["format"]?.stringValue == Self.format else {
            throw ValidationError("not a Latchkey tenant document: \"format\" must be \"\(Self.format)\"")
        }
        guard let tenant = json["tenant"], let id = tenant["tenant_id"]?.stringValue else {
            throw ValidationError("the document has no tenant.tenant_id")
        }
        guard let policy = json["policy"], policy.objectValue != nil else {
            throw ValidationError("the document's policy must be an object")
        }
        let templates = json["templates"]?.arrayValue ?? []
        let clients = json["clients"]?.arrayValue ?? []
        var seen = Set<String>()
        for template in templates {
            guard let softwareID = template["software_id"]?.stringValue, template["metadata"]?.objectValue != nil
            else { throw ValidationError("every template needs a software_id and a metadata object") }
            guard seen.insert(softwareID).inserted else {
                throw ValidationError("template \(softwareID) appears twice")
            }
        }
        seen = []
        for client in clients {
            guard let name = client["client_name"]?.stringValue, !name.isEmpty else {
                throw ValidationError("every client needs a client_name (it identifies the client on import)")
            }
            guard seen.insert(name).inserted else { throw ValidationError("client \"\(name)\" appears twice") }
        }
        self.init(
            tenantID: id, displayName: tenant["display_name"]?.stringValue, policy: policy,
            templates: templates.map(Self.templateSpecification), clients: clients.map(ClientSpecification.of))
    }

    init(tenantID: String, displayName: String?, policy: JSONValue, templates: [JSONValue], clients: [JSONValue]) {
        self.tenantID = tenantID
        self.displayName = displayName
        self.policy = policy
        self.templates = templates
        self.clients = clients
    }

    /// A template without its stored version (which counts changes, and is not part of the configuration).
    static func templateSpecification(_ template: JSONValue) -> JSONValue {
        [
            "software_id": template["software_id"] ?? .null, "metadata": template["metadata"] ?? [:],
            "overridable_fields": template["overridable_fields"] ?? [],
        ]
    }

    static func order(_ member: String) -> (JSONValue, JSONValue) -> Bool {
        { ($0[member]?.stringValue ?? "") < ($1[member]?.stringValue ?? "") }
    }
}
