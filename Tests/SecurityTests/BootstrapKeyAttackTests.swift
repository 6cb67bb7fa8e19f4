import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// `ADMIN_BOOTSTRAP_KEY` creates the first tenant and its first administrator client, then never works again.
@Suite struct BootstrapKeyAttackTests {
    @Test func bootstrapKeyIsSpentOnceAnAdministratorClientExists() async throws {
        try await SeededPlatform.run { platform in
            let key = PlatformProcesses.bootstrapKey
            let gateway = platform.endpoints.gateway
            let adminClient =
                #"{"client_name":"Backdoor","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"admin"}"#
            // A new tenant, created by the platform administrator, has no client yet.
            let admin = try await platform.adminToken()
            try expect(
                try await platform.http.postJSON(
                    "\(gateway)/admin/tenants", #"{"tenant_id":"fresh"}"#, headers: platform.bearer(admin)), 201,
                "a second tenant")

            let backdoor = try await platform.http.postJSON(
                "\(gateway)/admin/tenants/fresh/clients", adminClient, headers: platform.bearer(key))
            #expect(
                backdoor.status == 403,
                "the bootstrap key created an admin client in a new tenant: \(backdoor.status) \(backdoor.body.prefix(200))"
            )
            #expect(backdoor.json["error"] as? String == "access_denied")
            let tenant = try await platform.http.postJSON(
                "\(gateway)/admin/tenants", #"{"tenant_id":"evil"}"#, headers: platform.bearer(key))
            #expect(tenant.status == 403, "the bootstrap key created a tenant: \(tenant.status)")
            // The tenant stays empty; the platform administrator still administers it.
            let clients = try await platform.http.get(
                "\(gateway)/admin/tenants/fresh/clients", headers: platform.bearer(admin))
            #expect(clients.status == 200)
            #expect((clients.json["clients"] as? [Any])?.isEmpty == true)
        }
    }
}
