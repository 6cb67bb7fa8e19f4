import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// Admin tokens come from client credentials only: a user never holds one, whatever a client registers.
@Suite struct AdminTokenAttackTests {
    /// A user-facing client registered with `admin` cannot get a user an admin token.
    @Test func userFacingClientWithAdminScopeYieldsNoAdminToken() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let redirect = "com.attacker.app:/cb"
            let created = try await platform.createClient(
                #"{"client_name":"Looks harmless","redirect_uris":["\#(redirect)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"scope":"admin openid"}"#,
                adminToken: admin)
            let clientID = created.json["client_id"] as? String ?? ""

            // Asking for `admin` at /authorize is refused (a redirect with invalid_scope, no code).
            let asked = try await platform.authorize(clientID: clientID, redirectURI: redirect, scope: "admin")
            #expect(
                asked.code == nil,
                "a code was issued for scope admin: \(asked.response.status) \(asked.response.location ?? "")")
            #expect(
                asked.error == "invalid_scope",
                "\(asked.response.status) \(asked.response.location ?? asked.response.body.prefix(200).description)")

            // Without a scope the client gets its registered scope minus `admin`; that token does not administer.
            let implicit = try await platform.authorize(clientID: clientID, redirectURI: redirect, scope: nil)
            let tokens = try expect(
                try await platform.redeem(implicit, clientID: clientID, redirectURI: redirect), 200, "redeem")
            #expect(tokens.json["scope"] as? String == "openid")
            let userToken = tokens.json["access_token"] as? String ?? ""
            let attempt = try await platform.http.get(platform.adminBase, headers: platform.bearer(userToken))
            #expect(attempt.status == 401 || attempt.status == 403, "\(attempt.status) \(attempt.body.prefix(200))")
            #expect(
                try await platform.http.postJSON(
                    "\(platform.adminBase)/clients",
                    #"{"client_name":"x","grant_types":["client_credentials"],"response_types":[],"application_type":"web","scope":"admin"}"#,
                    headers: platform.bearer(userToken)
                ).status != 201)

            // The admin client itself still administers.
            #expect(try await platform.http.get(platform.adminBase, headers: platform.bearer(admin)).status == 200)
        }
    }
}
