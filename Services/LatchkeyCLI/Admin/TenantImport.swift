import ArgumentParser
import Foundation
import LatchkeyCore

/// Applies a ``TenantDocument`` to a tenant through the admin API, idempotently: what already matches is left
/// alone, so a second run changes nothing. Nothing is deleted: templates and clients the document does not
/// name stay as they are.
struct TenantImport {
    enum Action: String {
        case created, updated, unchanged
        /// A static client whose metadata differ (the admin API cannot edit a static client); with
        /// `--replace-changed-clients` it is revoked and created anew (`replaced`).
        case differs = "differs"
        case replaced
    }

    struct Change {
        var kind: String
        var name: String
        var action: Action
    }

    let api: AdminAPI
    let document: TenantDocument
    let tenant: String
    let dryRun: Bool
    let replaceChangedClients: Bool

    private var path: String { "/admin/tenants/\(AdminAPI.segment(tenant))" }

    /// The changes made (or, on a dry run, to be made) and the credentials of the clients created.
    func run() async throws -> (changes: [Change], credentials: [JSONValue]) {
        var changes: [Change] = []
        let policy = try Self.normalizedPolicy(document.policy, what: "the document's policy")
        let existing = try await api.find(path)
        if let existing {
            let stored = try Self.normalizedPolicy(existing["policy"] ?? [:], what: "the stored policy")
            if stored == policy {
                changes.append(Change(kind: "policy", name: tenant, action: .unchanged))
            } else {
                if !dryRun { _ = try await api.put(path + "/policy", policy) }
                changes.append(Change(kind: "policy", name: tenant, action: .updated))
            }
        } else {
            var body: [String: JSONValue] = ["tenant_id": .string(tenant), "policy": policy]
            body["display_name"] = document.displayName.map(JSONValue.string)
            if !dryRun { _ = try await api.post("/admin/tenants", .object(body)) }
            changes.append(Change(kind: "tenant", name: tenant, action: .created))
        }
        let live = existing != nil || !dryRun
        changes += try await templates(exists: live)
        let (clientChanges, credentials) = try await clients(exists: live)
        return (changes + clientChanges, credentials)
    }

    private func templates(exists: Bool) async throws -> [Change] {
        let stored = exists ? try await api.get(path + "/templates")["templates"]?.arrayValue ?? [] : []
        let byID = Dictionary(
            stored.map { ($0["software_id"]?.stringValue ?? "", TenantDocument.templateSpecification($0)) },
            uniquingKeysWith: { first, _ in first })
        var changes: [Change] = []
        for template in document.templates {
            let id = template["software_id"]?.stringValue ?? ""
            guard let current = byID[id] else {
                if !dryRun { _ = try await api.post(path + "/templates", template) }
                changes.append(Change(kind: "template", name: id, action: .created))
                continue
            }
            if Self.matches(template["metadata"] ?? [:], current["metadata"] ?? [:])
                && template["overridable_fields"] == current["overridable_fields"]
            {
                changes.append(Change(kind: "template", name: id, action: .unchanged))
            } else {
                if !dryRun { _ = try await api.put(path + "/templates/\(AdminAPI.segment(id))", template) }
                changes.append(Change(kind: "template", name: id, action: .updated))
            }
        }
        return changes
    }

    private func clients(exists: Bool) async throws -> ([Change], [JSONValue]) {
        let summaries =
            exists
            ? try await ClientPages.collect(api, tenant: tenant, filters: [("status", "active")]) {
                $0["client_kind"]?.stringValue == "static"
            } : []
        var byName: [String: [JSONValue]] = [:]
        for summary in summaries {
            guard let name = summary["client_name"]?.stringValue, let id = summary["client_id"]?.stringValue,
                document.clients.contains(where: { $0["client_name"]?.stringValue == name })
            else { continue }
            byName[name, default: []].append(try await api.get(path + "/clients/\(AdminAPI.segment(id))"))
        }
        var changes: [Change] = []
        var credentials: [JSONValue] = []
        for client in document.clients {
            let name = client["client_name"]?.stringValue ?? ""
            let matching = byName[name] ?? []
            guard matching.count <= 1 else {
                throw ValidationError(
                    "tenant \(tenant) has \(matching.count) active static clients named \"\(name)\"; revoke the extra ones"
                )
            }
            guard let current = matching.first else {
                if !dryRun { credentials.append(try await create(client)) }
                changes.append(Change(kind: "client", name: name, action: .created))
                continue
            }
            if Self.matches(client, ClientSpecification.of(current)) {
                changes.append(Change(kind: "client", name: name, action: .unchanged))
            } else if replaceChangedClients {
                if !dryRun {
                    credentials.append(try await create(client))
                    let id = AdminAPI.segment(current["client_id"]?.stringValue ?? "")
                    _ = try await api.post(
                        path + "/clients/\(id)/revoke", ["reason": "replaced by latchkey import"])
                }
                changes.append(Change(kind: "client", name: name, action: .replaced))
            } else {
                changes.append(Change(kind: "client", name: name, action: .differs))
            }
        }
        return (changes, credentials)
    }

    private func create(_ client: JSONValue) async throws -> JSONValue {
        let created = try await api.post(path + "/clients", client)
        var credential: [String: JSONValue] = [
            "client_name": client["client_name"] ?? .null, "client_id": created["client_id"] ?? .null,
        ]
        credential["client_secret"] = created["client_secret"]
        return .object(credential)
    }

    /// Every member the document gives has the stored value; members it leaves out take the gateway's defaults.
    static func matches(_ wanted: JSONValue, _ stored: JSONValue) -> Bool {
        guard let wanted = wanted.objectValue, let stored = stored.objectValue else { return false }
        return wanted.allSatisfy { stored[$0.key] == $0.value }
    }

    /// A policy as the gateway stores it (defaults filled in), so a short policy compares equal to its stored form.
    static func normalizedPolicy(_ policy: JSONValue, what: String) throws -> JSONValue {
        do {
            return try JSONValue(encoding: try TenantPolicy.parse(Data(CanonicalJSON.encode(policy))))
        } catch {
            throw ValidationError("\(what) is not a valid tenant policy: \(error)")
        }
    }
}
