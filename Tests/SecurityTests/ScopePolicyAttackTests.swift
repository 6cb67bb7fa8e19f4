import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// Every grant issues the intersection of the request, the client's current scope and the tenant policy.
@Suite struct ScopePolicyAttackTests {
    static let policy =
        #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read"],"branding":{"name":"Latchkey Demo"}}"#

    /// A scope removed from the tenant policy is no longer issued, by client credentials or by refresh.
    @Test func removedScopeIsNotIssuedToExistingClientsOrRefreshFamilies() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let service = try await platform.createClient(
                #"{"client_name":"Batch job","grant_types":["client_credentials"],"response_types":[],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","scope":"orders:read orders:write"}"#,
                adminToken: admin)
            let basic = platform.basic(
                service.json["client_id"] as? String ?? "", service.json["client_secret"] as? String ?? "")
            func clientCredentials(_ scope: String?) async throws -> DemoResponse {
                try await platform.http.postForm(
                    platform.endpoints.tokenEndpoint,
                    [("grant_type", "client_credentials")] + (scope.map { [("scope", $0)] } ?? []),
                    headers: basic)
            }
            // A user-facing confidential client with a refresh family holding orders:write.
            let redirect = "https://app.example.com/cb"
            let web = try await platform.createClient(
                #"{"client_name":"Web shop","redirect_uris":["\#(redirect)"],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","grant_types":["authorization_code","refresh_token"],"scope":"openid orders:read orders:write"}"#,
                adminToken: admin)
            let webID = web.json["client_id"] as? String ?? ""
            let webBasic = platform.basic(webID, web.json["client_secret"] as? String ?? "")
            let code = try await platform.authorize(
                clientID: webID, redirectURI: redirect, scope: "openid orders:read orders:write")
            let first = try expect(
                try await platform.redeem(code, clientID: webID, redirectURI: redirect, headers: webBasic), 200,
                "redeem")
            #expect(first.json["scope"] as? String == "openid orders:read orders:write")
            #expect(try await clientCredentials("orders:write").status == 200)

            try expect(
                try await platform.http.send(
                    "PUT", "\(platform.adminBase)/policy",
                    headers: platform.bearer(admin) + [("Content-Type", "application/json")],
                    body: Self.policy), 200, "remove orders:write from the policy")

            // Services read a tenant's policy through a short-lived cache: wait for the change to arrive.
            var refused = try await clientCredentials("orders:write")
            _ = try await eventually(within: .seconds(60)) {
                if refused.status == 200 { refused = try await clientCredentials("orders:write") }
                return refused.status != 200
            }
            #expect(
                refused.status == 400,
                "client_credentials for a removed scope: \(refused.status) \(refused.body.prefix(200))")
            #expect(refused.json["error"] as? String == "invalid_scope")
            let narrowed = try expect(try await clientCredentials(nil), 200, "client_credentials without scope")
            #expect(narrowed.json["scope"] as? String == "orders:read")
            let mixed = try expect(
                try await clientCredentials("orders:read orders:write"), 200, "client_credentials, mixed")
            #expect(mixed.json["scope"] as? String == "orders:read")

            let refreshed = try expect(
                try await platform.http.postForm(
                    platform.endpoints.tokenEndpoint,
                    [("grant_type", "refresh_token"), ("refresh_token", first.json["refresh_token"] as? String ?? "")],
                    headers: webBasic), 200, "refresh")
            #expect(
                refreshed.json["scope"] as? String == "openid orders:read",
                "refresh kept a removed scope: \(refreshed.body.prefix(300))")
        }
    }
}
