import ArgumentParser
import Foundation
import LatchkeyCore

/// `latchkey clients create|list|revoke --tenant T` through the admin API.
struct ClientsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients",
        abstract: "Create static clients, list and revoke clients of a tenant (admin API).",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a static client (DCR client, admin client, BFF…); its secret is shown once.",
            discussion: """
                Metadata come from --metadata (RFC 7591 JSON, plus "first_party"), completed or overridden by the \
                options. Example: latchkey clients create --tenant acme --name "Acme app (registration)" \
                --redirect-uri com.acme.app:/oauth --auth-method none --grant-type authorization_code --scope dcr \
                --first-party
                """)
        @OptionGroup var admin: AdminOptions
        @Option(help: "The tenant id.") var tenant: String
        @Option(help: "A JSON file with the client metadata.") var metadata: String?
        @Option(help: "client_name") var name: String?
        @Option(help: "A redirect URI (repeatable).") var redirectURI: [String] = []
        @Option(help: "A grant type (repeatable): authorization_code, refresh_token, client_credentials.")
        var grantType: [String] = []
        @Option(help: "The scope (space-separated).") var scope: String?
        @Option(help: "token_endpoint_auth_method: client_secret_basic, client_secret_post, private_key_jwt, none.")
        var authMethod: String?
        @Option(help: "application_type: web or native.") var applicationType: String?
        @Flag(help: "The tenant's own app: its users see no consent page.") var firstParty = false
        @Option(help: "Write the client id and secret to this file (mode 0600) instead of printing.")
        var credentialsFile: String?

        func run() async throws {
            var body = try metadata.map { try JSONFile.read($0).objectValue ?? [:] } ?? [:]
            if let name { body["client_name"] = .string(name) }
            if !redirectURI.isEmpty { body["redirect_uris"] = .array(redirectURI.map(JSONValue.string)) }
            if !grantType.isEmpty {
                body["grant_types"] = .array(grantType.map(JSONValue.string))
                // The response types follow the grants unless the metadata file says otherwise.
                if body["response_types"] == nil {
                    body["response_types"] = grantType.contains("authorization_code") ? ["code"] : []
                }
            }
            if let scope { body["scope"] = .string(scope) }
            if let authMethod { body["token_endpoint_auth_method"] = .string(authMethod) }
            if let applicationType { body["application_type"] = .string(applicationType) }
            if firstParty { body["first_party"] = true }
            guard !body.isEmpty else { throw ValidationError("give --metadata or client options such as --name") }
            let created = try await AdminAPI.with(admin) {
                try await $0.post("/admin/tenants/\(AdminAPI.segment(tenant))/clients", .object(body))
            }
            try SecretOutput.emit(["client": created], file: credentialsFile, format: admin.output) { shown in
                var lines = ["client \(created["client_id"]?.stringValue ?? "?") created in tenant \(tenant)"]
                if shown, let secret = created["client_secret"]?.stringValue {
                    lines.append("client secret (shown once): \(secret)")
                }
                return lines.joined(separator: "\n")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a tenant's clients, newest first.")
        @OptionGroup var admin: AdminOptions
        @Option(help: "The tenant id.") var tenant: String
        @Option(help: "active, revoked, expired or deleted.") var status: String?
        @Option(help: "Only instances of this template.") var softwareID: String?
        @Option(help: "Only clients of this user id.") var user: String?
        @Flag(help: "Only static clients (not dynamic registrations).") var staticOnly = false
        @Option(help: "At most this many clients (pages are followed).") var limit = 100

        func run() async throws {
            guard limit > 0 else { throw ValidationError("--limit must be positive") }
            var filters: [(String, String)] = []
            if let status { filters.append(("status", status)) }
            if let softwareID { filters.append(("software_id", softwareID)) }
            if let user { filters.append(("user", user)) }
            let clients = try await AdminAPI.with(admin) { api in
                try await ClientPages.collect(api, tenant: tenant, filters: filters, limit: limit) {
                    !staticOnly || $0["client_kind"]?.stringValue == "static"
                }
            }
            switch admin.output {
            case .json: print(PrettyJSON.string(["clients": .array(clients)]))
            case .table:
                let rows = clients.map { client in
                    ["client_id", "client_name", "client_kind", "status", "software_id", "username", "created_at"].map {
                        client[$0].map(JSONText.plain) ?? "-"
                    }
                }
                print(
                    TextTable.render(
                        header: ["CLIENT ID", "NAME", "KIND", "STATUS", "TEMPLATE", "USER", "CREATED"], rows: rows))
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a client at once: refresh tokens revoked, sidecars refuse its tokens.")
        @OptionGroup var admin: AdminOptions
        @Option(help: "The tenant id.") var tenant: String
        @Argument(help: "The client id.") var clientID: String
        @Option(help: "Recorded with the revocation (e.g. \"device stolen\").") var reason: String?

        func run() async throws {
            var body: [String: JSONValue] = [:]
            body["reason"] = reason.map(JSONValue.string)
            let answer = try await AdminAPI.with(admin) {
                try await $0.post(
                    "/admin/tenants/\(AdminAPI.segment(tenant))/clients/\(AdminAPI.segment(clientID))/revoke",
                    .object(body))
            }
            switch admin.output {
            case .json: print(PrettyJSON.string(answer))
            case .table:
                print(
                    "client \(clientID) revoked at \(answer["revoked_at"].map(JSONText.plain) ?? "?") (\(answer["reason"].map(JSONText.plain) ?? "admin"))"
                )
            }
        }
    }
}

/// Follows `next_cursor` through `GET …/clients`.
enum ClientPages {
    static func collect(
        _ api: AdminAPI, tenant: String, filters: [(String, String)], limit: Int = .max,
        where include: (JSONValue) -> Bool = { _ in true }
    ) async throws -> [JSONValue] {
        var clients: [JSONValue] = []
        var cursor: String?
        repeat {
            let query = (filters + [("limit", "500")] + (cursor.map { [("cursor", $0)] } ?? []))
            let page = try await api.get("/admin/tenants/\(AdminAPI.segment(tenant))/clients?" + DemoHTTP.form(query))
            for client in page["clients"]?.arrayValue ?? [] where include(client) {
                clients.append(client)
                if clients.count == limit { return clients }
            }
            cursor = page["next_cursor"]?.stringValue
        } while cursor != nil
        return clients
    }
}
