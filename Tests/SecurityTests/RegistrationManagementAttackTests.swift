import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// RFC 7592 manages dynamically registered clients only, each with its own registration access token.
@Suite struct RegistrationManagementAttackTests {
    /// Clients an administrator created have no registration access token; no string may stand in for it.
    @Test func madeUpTokenCannotReadRewriteOrDeleteAdminCreatedClients() async throws {
        try await SeededPlatform.run { platform in
            let gateway = platform.endpoints.gateway
            for clientID in [platform.credentials.dcrClientID, platform.credentials.adminClientID] {
                let url = "\(gateway)/t/demo/register/\(clientID)"
                for guess in ["no-such-client", "null", "x"] {
                    let read = try await platform.http.get(url, headers: platform.bearer(guess))
                    #expect(
                        read.status == 401, "GET \(clientID) with \(guess): \(read.status) \(read.body.prefix(200))")
                    #expect(read.json["error"] as? String == "invalid_token")
                    let rewrite = try await platform.http.send(
                        "PUT", url, headers: platform.bearer(guess) + [("Content-Type", "application/json")],
                        body:
                            #"{"client_id":"\#(clientID)","redirect_uris":["com.attacker.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#
                    )
                    #expect(rewrite.status == 401, "PUT \(clientID) with \(guess): \(rewrite.status)")
                    let delete = try await platform.http.send("DELETE", url, headers: platform.bearer(guess))
                    #expect(delete.status == 401, "DELETE \(clientID) with \(guess): \(delete.status)")
                }
            }
            // Both clients are untouched and still work.
            let admin = try await platform.adminToken()
            let dcr = try await platform.http.get(
                "\(platform.adminBase)/clients/\(platform.credentials.dcrClientID)", headers: platform.bearer(admin))
            #expect(dcr.json["status"] as? String == "active")
            #expect((dcr.json["redirect_uris"] as? [String]) == [DemoSeeder.dcrRedirectURI])

            // A dynamically registered client is still managed with its own token, and only with it.
            let minted = try expect(
                try await platform.http.postJSON(
                    "\(platform.adminBase)/initial-access-tokens", #"{"uses":1}"#, headers: platform.bearer(admin)),
                201, "initial access token")
            let registered = try expect(
                try await platform.http.postJSON(
                    "\(gateway)/t/demo/register",
                    #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}"#,
                    headers: platform.bearer(minted.json["initial_access_token"] as? String ?? "")), 201, "register")
            let own = "\(gateway)/t/demo/register/\(registered.json["client_id"] as? String ?? "")"
            let token = registered.json["registration_access_token"] as? String ?? ""
            #expect(try await platform.http.get(own, headers: platform.bearer(token)).status == 200)
            #expect(try await platform.http.get(own, headers: platform.bearer("no-such-client")).status == 401)
        }
    }
}
