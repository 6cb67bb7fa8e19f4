import ArgumentParser
import Foundation
import LatchkeyCore

/// `latchkey tenants create|list|show` through the admin API.
struct TenantsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenants",
        abstract: "Create, list and show tenants (admin API).",
        subcommands: [Create.self, List.self, Show.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a tenant and its administrator client; the client's secret is shown once.",
            discussion: """
                The bootstrap key creates only the first tenant; later tenants need a platform admin \
                (LATCHKEY_ADMIN_CLIENT_ID of the PLATFORM_TENANT).
                """)
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The tenant id (a-z, 0-9, '-').") var tenant: String
        @Option(help: "The display name (default: the tenant id).") var displayName: String?
        @Option(help: "A JSON file with the tenant policy.") var policy: String?
        @Option(help: "The name of the administrator client created with the tenant.")
        var adminClientName = "Tenant administrator"
        @Flag(help: "Create no administrator client.") var noAdminClient = false
        @Option(help: "Write the administrator client's id and secret to this file (mode 0600) instead of printing.")
        var credentialsFile: String?

        func run() async throws {
            var body: [String: JSONValue] = ["tenant_id": .string(tenant)]
            body["display_name"] = displayName.map(JSONValue.string)
            if let policy { body["policy"] = try JSONFile.read(policy) }
            try await AdminAPI.with(admin) { api in
                let created = try await api.post("/admin/tenants", .object(body))
                var result: [String: JSONValue] = ["tenant": created]
                if !noAdminClient {
                    let client = try await api.post(
                        "/admin/tenants/\(AdminAPI.segment(tenant))/clients",
                        ClientSpecification.adminClient(name: adminClientName))
                    result["admin_client"] = client
                }
                try SecretOutput.emit(result, file: credentialsFile, format: admin.output) { secretsShown in
                    var lines = [
                        "tenant \(created["tenant_id"]?.stringValue ?? tenant) created (policy version \(created["policy_version"].map(JSONText.plain) ?? "1"))"
                    ]
                    if let client = result["admin_client"] {
                        lines.append("admin client: \(client["client_id"]?.stringValue ?? "?")")
                        if secretsShown {
                            lines.append(
                                "admin client secret (shown once): \(client["client_secret"]?.stringValue ?? "-")")
                        }
                    }
                    return lines.joined(separator: "\n")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List every tenant (platform admins).")
        @OptionGroup var admin: AdminOptions

        func run() async throws {
            let answer = try await AdminAPI.with(admin) { try await $0.get("/admin/tenants") }
            switch admin.output {
            case .json: print(PrettyJSON.string(answer))
            case .table:
                let rows = (answer["tenants"]?.arrayValue ?? []).map { tenant in
                    ["tenant_id", "display_name", "status", "policy_version", "created_at"].map {
                        tenant[$0].map(JSONText.plain) ?? "-"
                    }
                }
                print(TextTable.render(header: ["TENANT", "DISPLAY NAME", "STATUS", "POLICY", "CREATED"], rows: rows))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a tenant, its status and current policy.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The tenant id.") var tenant: String

        func run() async throws {
            let answer = try await AdminAPI.with(admin) {
                try await $0.get("/admin/tenants/\(AdminAPI.segment(tenant))")
            }
            switch admin.output {
            case .json: print(PrettyJSON.string(answer))
            case .table:
                let rows = ["tenant_id", "display_name", "status", "policy_version"].map {
                    [$0, answer[$0].map(JSONText.plain) ?? "-"]
                }
                print(TextTable.render(header: ["FIELD", "VALUE"], rows: rows))
                print("policy:\n" + PrettyJSON.string(answer["policy"] ?? .object([:])))
            }
        }
    }
}
