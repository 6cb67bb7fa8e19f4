import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// The operator commands of the `latchkey` executable against the whole platform as processes: tenants and
/// clients through the admin API, and an export → import round trip into a new tenant that reproduces it.
@Suite(.serialized) struct TenantExportImportTests {
    @Test func exportImportRoundTripReproducesTheTenant() async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let platform = try await PlatformProcesses(database: scratch)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            do {
                try await play(platform, folder: folder.path)
            } catch {
                Issue.record(
                    "\(error)\n--- gateway\n\(platform.output("registration-gateway").suffix(2_000))\n--- token\n\(platform.output("token-service").suffix(2_000))"
                )
            }
            try? FileManager.default.removeItem(at: folder)
            _ = await platform.stop()
        }
    }

    private func play(_ platform: PlatformProcesses, folder: String) async throws {
        let urls = platform.urls
        func file(_ name: String) -> String { "\(folder)/\(name)" }
        @discardableResult func latchkey(_ arguments: [String], _ environment: [String: String], exit: Int32 = 0)
            async throws
            -> LatchkeyRun
        {
            let run = try await LatchkeyRun.run(arguments, environment: environment)
            #expect(run.status == exit, "latchkey \(arguments.joined(separator: " ")): \(run)")
            return run
        }

        // The bootstrap key creates the first tenant (the platform tenant) and its administrator.
        let bootstrap = ["LATCHKEY_ADMIN_URL": urls.gateway, "LATCHKEY_BOOTSTRAP_KEY": PlatformProcesses.bootstrapKey]
        let created = try await latchkey(
            ["tenants", "create", "demo", "--credentials-file", file("demo-admin.json"), "--output", "json"], bootstrap)
        #expect(!created.output.contains("\"client_secret\""), "the secret went to the file, not the terminal")
        let demoAdmin = try JSONFile.read(file("demo-admin.json"))["admin_client"]
        let secret = try #require(demoAdmin?["client_secret"]?.stringValue)
        try JSONFile.write(secret, to: file("demo-secret"), secret: true)
        let admin = [
            "LATCHKEY_ADMIN_URL": urls.gateway, "LATCHKEY_ADMIN_ISSUER": "\(urls.tokenService)/t/demo",
            "LATCHKEY_ADMIN_CLIENT_ID": try #require(demoAdmin?["client_id"]?.stringValue),
            "LATCHKEY_ADMIN_CLIENT_SECRET_FILE": file("demo-secret"),
        ]

        // The source tenant: a policy, a template, two static clients, one revoked client.
        let policy: JSONValue = [
            "registration_mechanisms": ["user_token", "initial_access_token"],
            "allowed_scopes": ["openid", "profile", "offline_access", "orders:read"], "branding": ["name": "Source"],
            "self_signup": true,
        ]
        try JSONFile.write(PrettyJSON.string(policy), to: file("policy.json"), secret: false)
        try await latchkey(
            [
                "tenants", "create", "src", "--display-name", "Source", "--policy", file("policy.json"),
                "--credentials-file", file("src-admin.json"),
            ], admin)
        try await latchkey(
            [
                "clients", "create", "--tenant", "src", "--name", "Src app (registration)", "--redirect-uri",
                "com.src.app:/oauth", "--auth-method", "none", "--grant-type", "authorization_code", "--scope", "dcr",
                "--first-party", "--application-type", "native",
            ], admin)
        let bff = try await latchkey(
            [
                "clients", "create", "--tenant", "src", "--name", "Src BFF", "--redirect-uri",
                "https://bff.src.example/callback", "--grant-type", "authorization_code", "--grant-type",
                "refresh_token", "--scope", "openid orders:read", "--output", "json",
            ], admin)
        #expect(try bff.json()["client"]?["client_secret"]?.stringValue?.isEmpty == false)
        let old = try await latchkey(
            [
                "clients", "create", "--tenant", "src", "--name", "Old", "--grant-type", "client_credentials",
                "--output", "json",
            ], admin)
        let oldID = try #require(try old.json()["client"]?["client_id"]?.stringValue)
        try await latchkey(["clients", "revoke", "--tenant", "src", oldID, "--reason", "rotated"], admin)
        let http = DemoHTTP()
        defer { Task { try? await http.shutdown() } }
        let token = try await DemoSeeder.adminToken(
            http, DemoEndpoints(gateway: urls.gateway, tokenService: urls.tokenService, tenant: "demo"),
            clientID: admin["LATCHKEY_ADMIN_CLIENT_ID"]!, secret: secret)
        try expect(
            try await http.postJSON(
                "\(urls.gateway)/admin/tenants/src/templates",
                #"{"software_id":"src-mobile","metadata":{"client_name":"Src mobile","redirect_uris":["com.src.app:/oauth"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"scope":"openid orders:read offline_access","application_type":"native"},"overridable_fields":["client_name"]}"#,
                headers: [("Authorization", "Bearer \(token)")]), 201, "create the template")

        // Export: no secrets, no instance members, the revoked client left out.
        try await latchkey(["export", "src", "--file", file("src.json")], admin)
        let exportedText = try String(contentsOfFile: file("src.json"), encoding: .utf8)
        #expect(!exportedText.contains("client_secret\"") && !exportedText.contains("\"client_id\""))
        let exported = try JSONFile.read(file("src.json"))
        #expect(exported["templates"]?.arrayValue?.count == 1)
        let names = (exported["clients"]?.arrayValue ?? []).compactMap { $0["client_name"]?.stringValue }
        #expect(names == ["Src BFF", "Src app (registration)", "Tenant administrator"])

        // Import into a new tenant, twice: the second run changes nothing.
        let first = try await latchkey(
            [
                "import", file("src.json"), "--tenant", "dst", "--credentials-file", file("dst-creds.json"), "--output",
                "json",
            ], admin)
        #expect(!first.output.contains("\"client_secret\""))
        #expect(
            try actions(first) == [
                "tenant:dst": "created", "template:src-mobile": "created",
                "client:Src BFF": "created", "client:Src app (registration)": "created",
                "client:Tenant administrator": "created",
            ])
        let credentials = try JSONFile.read(file("dst-creds.json"))["credentials"]?.arrayValue ?? []
        #expect(credentials.count == 3)
        // The same document in YAML: the same data, and importing it changes nothing either.
        try await latchkey(["export", "src", "--file", file("src.yaml")], admin)
        let yaml = try String(contentsOfFile: file("src.yaml"), encoding: .utf8)
        #expect(yaml.hasPrefix("clients:\n"), "block-style YAML: \(yaml.prefix(200))")
        #expect(try DocumentFormat.read(file("src.yaml")) == exported)
        let second = try await latchkey(["import", file("src.yaml"), "--tenant", "dst", "--output", "json"], admin)
        #expect(Set(try actions(second).values) == ["unchanged"], "\(second)")
        #expect(try second.json()["credentials"] == nil)

        // Exporting the new tenant gives the same document, but for the tenant id.
        try await latchkey(["export", "dst", "--file", file("dst.json")], admin)
        var expected = exported.objectValue ?? [:]
        expected["tenant"] = ["tenant_id": "dst", "display_name": "Source"]
        #expect(try JSONFile.read(file("dst.json")) == .object(expected))

        // The imported administrator client works: with its credentials the new tenant administers itself.
        let dstAdmin = try #require(
            credentials.first { $0["client_name"] == "Tenant administrator" }?["client_secret"]?.stringValue)
        try JSONFile.write(dstAdmin, to: file("dst-secret"), secret: true)
        var dst = admin
        dst["LATCHKEY_ADMIN_ISSUER"] = "\(urls.tokenService)/t/dst"
        dst["LATCHKEY_ADMIN_CLIENT_ID"] =
            credentials.first { $0["client_name"] == "Tenant administrator" }?[
                "client_id"]?.stringValue
        dst["LATCHKEY_ADMIN_CLIENT_SECRET_FILE"] = file("dst-secret")
        let listed = try await latchkey(
            ["clients", "list", "--tenant", "dst", "--static-only", "--output", "json"], dst)
        #expect(try listed.json()["clients"]?.arrayValue?.count == 3)
        let table = try await latchkey(["clients", "list", "--tenant", "dst"], dst)
        #expect(table.output.contains("Src BFF") && table.output.contains("CLIENT ID"), "\(table)")
        // A tenant admin may not list every tenant; a platform admin may.
        let refused = try await latchkey(["tenants", "list"], dst, exit: 1)
        #expect(refused.output.contains("401"), "\(refused)")
        let tenants = try await latchkey(["tenants", "list", "--output", "json"], admin)
        let ids = (try tenants.json()["tenants"]?.arrayValue ?? []).compactMap { $0["tenant_id"]?.stringValue }
        #expect(ids == ["demo", "dst", "src"])
        let shown = try await latchkey(["tenants", "show", "dst", "--output", "json"], admin)
        #expect(try shown.json()["policy_version"] == 1, "the second import left the policy alone")

        // A changed document: the policy and template are updated, a changed static client is reported until
        // it may be replaced.
        var changed = exported.objectValue ?? [:]
        changed["policy"] = .object((policy.objectValue ?? [:]).merging(["self_signup": false]) { $1 })
        changed["templates"] = .array(
            (exported["templates"]?.arrayValue ?? []).map { template in
                var object = template.objectValue ?? [:]
                object["overridable_fields"] = ["client_name", "logo_uri"]
                return .object(object)
            })
        changed["clients"] = .array(
            (exported["clients"]?.arrayValue ?? []).map { client in
                guard client["client_name"] == "Src BFF" else { return client }
                var object = client.objectValue ?? [:]
                object["scope"] = "openid"
                return .object(object)
            })
        try JSONFile.write(PrettyJSON.string(.object(changed)), to: file("changed.json"), secret: false)
        let dryRun = try await latchkey(
            ["import", file("changed.json"), "--tenant", "dst", "--dry-run", "--output", "json"], admin, exit: 1)
        #expect(try actions(dryRun)["policy:dst"] == "updated")
        #expect(try actions(dryRun)["client:Src BFF"] == "differs")
        let unchangedByDryRun = try await latchkey(["tenants", "show", "dst", "--output", "json"], admin)
        #expect(try unchangedByDryRun.json()["policy_version"] == 1)
        let replaced = try await latchkey(
            ["import", file("changed.json"), "--tenant", "dst", "--replace-changed-clients", "--output", "json"],
            admin)
        #expect(
            try actions(replaced) == [
                "policy:dst": "updated", "template:src-mobile": "updated",
                "client:Src BFF": "replaced", "client:Src app (registration)": "unchanged",
                "client:Tenant administrator": "unchanged",
            ])
        let again = try await latchkey(["import", file("changed.json"), "--tenant", "dst", "--output", "json"], admin)
        #expect(Set(try actions(again).values) == ["unchanged"], "\(again)")

        // Errors of the API come back as a non-zero exit with the RFC-style error.
        let unknown = try await latchkey(["clients", "revoke", "--tenant", "dst", "no-such-client"], admin, exit: 1)
        #expect(unknown.output.contains("404"), "\(unknown)")
    }

    /// `kind:name` → action of an import's JSON output.
    private func actions(_ run: LatchkeyRun) throws -> [String: String] {
        var actions: [String: String] = [:]
        for change in try run.json()["changes"]?.arrayValue ?? [] {
            actions["\(change["kind"]?.stringValue ?? ""):\(change["name"]?.stringValue ?? "")"] =
                change["action"]?.stringValue
        }
        return actions
    }
}
