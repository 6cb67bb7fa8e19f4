import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// RFC 7662 §2.2: introspection tells a client about its own tokens; other clients' only with the
/// `introspect` capability an administrator gives.
@Suite struct IntrospectionAttackTests {
    @Test func clientCannotReadAnotherClientsTokenByIntrospection() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            func confidential(_ name: String, scope: String) async throws -> [(String, String)] {
                let created = try await platform.createClient(
                    #"{"client_name":"\#(name)","grant_types":["client_credentials"],"response_types":[],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","scope":"\#(scope)"}"#,
                    adminToken: admin)
                return platform.basic(
                    created.json["client_id"] as? String ?? "", created.json["client_secret"] as? String ?? "")
            }
            let attacker = try await confidential("Self-interested", scope: "orders:read")
            let victim = try await confidential("Victim", scope: "orders:read")
            let resourceServer = try await confidential("Resource server", scope: "introspect")
            func token(_ auth: [(String, String)]) async throws -> String {
                let response = try expect(
                    try await platform.http.postForm(
                        platform.endpoints.tokenEndpoint,
                        [("grant_type", "client_credentials"), ("scope", "orders:read")], headers: auth), 200, "token")
                return response.json["access_token"] as? String ?? ""
            }
            let victimToken = try await token(victim)
            let ownToken = try await token(attacker)
            let introspect = "\(platform.endpoints.issuer)/introspect"

            let stolen = try expect(
                try await platform.http.postForm(introspect, [("token", victimToken)], headers: attacker), 200,
                "introspect")
            #expect(stolen.json["active"] as? Bool == false, "a client read another client's token: \(stolen.body)")
            #expect(stolen.json.count == 1)
            let own = try expect(
                try await platform.http.postForm(introspect, [("token", ownToken)], headers: attacker), 200,
                "introspect own")
            #expect(own.json["active"] as? Bool == true)
            let allowed = try expect(
                try await platform.http.postForm(introspect, [("token", victimToken)], headers: resourceServer), 200,
                "introspect")
            #expect(allowed.json["active"] as? Bool == true)
            #expect(allowed.json["client_id"] != nil)

            let wrongSecret = platform.basic(platform.credentials.adminClientID, "not-the-secret")
            let refused = try await platform.http.postForm(introspect, [("token", victimToken)], headers: wrongSecret)
            #expect(refused.status == 401)
            #expect(refused.json["error"] as? String == "invalid_client")
            // The capability is never put into a token.
            let capability = try await platform.http.postForm(
                platform.endpoints.tokenEndpoint, [("grant_type", "client_credentials"), ("scope", "introspect")],
                headers: resourceServer)
            #expect(capability.status == 400)
        }
    }
}
