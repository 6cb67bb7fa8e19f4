import ArgumentParser
import Foundation
import LatchkeyCore

/// `latchkey export TENANT`: the tenant's policy, templates and static clients as one JSON or YAML document.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a tenant's policy, templates and static clients as one JSON or YAML document (no secrets).")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The tenant id.") var tenant: String
    @Option(name: .shortAndLong, help: "Write the document to this file instead of standard output.") var file: String?
    @Option(help: "json or yaml (default: yaml when --file ends in .yaml or .yml, else json).")
    var format: DocumentFormat?

    func run() async throws {
        let document = try await AdminAPI.with(admin) { try await TenantDocument.export($0, tenant: tenant) }
        let text = (format ?? DocumentFormat(fileName: file)).render(document.json)
        if let file {
            try JSONFile.write(text, to: file, secret: false)
        } else {
            print(text)
        }
    }
}

/// `latchkey import FILE [--tenant NEW]`: creates or updates a tenant from an exported document, idempotently.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Create or update a tenant from an exported document; a second run changes nothing.",
        discussion: """
            The tenant is created when missing (which needs a platform admin), else its policy is updated when it \
            differs. Templates are matched by software_id, static clients by client_name; nothing is deleted. \
            New clients get new ids and secrets, printed once or written to --credentials-file. A static client \
            whose metadata differ cannot be edited through the admin API: it is reported (exit 1) unless \
            --replace-changed-clients revokes it and creates it anew.
            """)
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The document, JSON or YAML (`-` for standard input).") var file: String
    @Option(help: "The tenant to import into (default: the document's tenant).") var tenant: String?
    @Flag(help: "Show what would change, change nothing.") var dryRun = false
    @Flag(help: "Revoke static clients whose metadata differ and create them anew (new id and secret).")
    var replaceChangedClients = false
    @Option(help: "Write the new clients' ids and secrets to this file (mode 0600) instead of printing them.")
    var credentialsFile: String?

    func run() async throws {
        let document = try TenantDocument(parsing: try DocumentFormat.read(file))
        let target = tenant ?? document.tenantID
        let (changes, credentials) = try await AdminAPI.with(admin) { api in
            try await TenantImport(
                api: api, document: document, tenant: target, dryRun: dryRun,
                replaceChangedClients: replaceChangedClients
            ).run()
        }
        var result: [String: JSONValue] = [
            "tenant_id": .string(target), "dry_run": .bool(dryRun),
            "changes": .array(
                changes.map {
                    ["kind": .string($0.kind), "name": .string($0.name), "action": .string($0.action.rawValue)]
                }),
        ]
        if !credentials.isEmpty { result["credentials"] = .array(credentials) }
        try SecretOutput.emit(result, file: credentials.isEmpty ? nil : credentialsFile, format: admin.output) {
            shown in
            var text = TextTable.render(
                header: ["KIND", "NAME", "ACTION"], rows: changes.map { [$0.kind, $0.name, $0.action.rawValue] })
            let counts = [TenantImport.Action.created, .updated, .replaced, .unchanged, .differs].map { action in
                "\(changes.filter { $0.action == action }.count) \(action.rawValue)"
            }
            text += "\n" + (dryRun ? "dry run, nothing changed: " : "") + counts.joined(separator: ", ")
            if shown {
                for credential in credentials {
                    text +=
                        "\nnew client \"\(credential["client_name"].map(JSONText.plain) ?? "")\": \(credential["client_id"].map(JSONText.plain) ?? "")"
                        + (credential["client_secret"].map { " secret (shown once): \(JSONText.plain($0))" } ?? "")
                }
            }
            return text
        }
        if changes.contains(where: { $0.action == .differs }) {
            throw ValidationErrorText(
                "static clients differ from the document and were left as they are; use --replace-changed-clients")
        }
    }
}
