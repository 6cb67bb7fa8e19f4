import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import LatchkeyCLI

/// A revoked token stops working at the API within seconds: RFC 7009 revocation of an access token, and
/// of a refresh token (its family's live access tokens with it), reach the sidecar through `TokenRevoked`.
@Suite struct TokenRevocationAttackTests {
    @Test func revokedTokensAreRefusedByTheSidecarWithinSeconds() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let key = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let redirect = "https://shop.example.com/cb"
            let web = try await platform.createClient(
                #"{"client_name":"Shop","redirect_uris":["\#(redirect)"],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","grant_types":["authorization_code","refresh_token"],"scope":"openid orders:read"}"#,
                adminToken: admin)
            let clientID = web.json["client_id"] as? String ?? ""
            let basic = platform.basic(clientID, web.json["client_secret"] as? String ?? "")

            // 1. An access token revoked by itself.
            let first = try await boundTokens(platform, clientID: clientID, redirect: redirect, basic: basic, key: key)
            let access = first.json["access_token"] as? String ?? ""
            #expect(try await waitUntilAccepted(platform, token: access, key: key), "control: the token works")
            try expect(
                try await platform.http.postForm(
                    "\(platform.endpoints.issuer)/revoke", [("token", access), ("token_type_hint", "access_token")],
                    headers: basic),
                200, "revoke the access token")
            let refusedAfter = try await secondsUntilRefused(platform, token: access, key: key)
            #expect(
                refusedAfter != nil && refusedAfter! < 5,
                "a revoked access token was still accepted (\(String(describing: refusedAfter)) s)")

            // 2. A refresh token revoked: its family's live access tokens die with it.
            let second = try await boundTokens(platform, clientID: clientID, redirect: redirect, basic: basic, key: key)
            let familyAccess = second.json["access_token"] as? String ?? ""
            #expect(
                try await waitUntilAccepted(platform, token: familyAccess, key: key), "control: the second token works")
            try expect(
                try await platform.http.postForm(
                    "\(platform.endpoints.issuer)/revoke", [("token", second.json["refresh_token"] as? String ?? "")],
                    headers: basic),
                200, "revoke the refresh token")
            let familyRefusedAfter = try await secondsUntilRefused(platform, token: familyAccess, key: key)
            #expect(
                familyRefusedAfter != nil && familyRefusedAfter! < 5,
                "an access token of a revoked family was still accepted (\(String(describing: familyRefusedAfter)) s)")
        }
    }

    /// The account page's "Sign out of this device" and "Remove this device" end the user's tokens at the API
    /// within seconds too (`TokenRevoked` and `ClientRevoked`), like the user's apps calling the account API.
    @Test func accountPageActionsReachTheSidecarWithinSeconds() async throws {
        try await SeededPlatform.run { platform in
            let key = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let redirect = DemoSeeder.dcrRedirectURI
            for (action, name) in [("sign-out", "Phone"), ("remove", "Tablet")] {
                let instance = try await registerInstanceOfTheDemoUser(platform, name: name)
                let tokens = try await boundTokens(
                    platform, clientID: instance, redirect: redirect, basic: [], key: key)
                let access = tokens.json["access_token"] as? String ?? ""
                #expect(
                    try await waitUntilAccepted(platform, token: access, key: key), "control: \(name)'s token works")
                try await accountAction(platform, action, clientID: instance)
                let refusedAfter = try await secondsUntilRefused(platform, token: access, key: key)
                #expect(
                    refusedAfter != nil && refusedAfter! < 10,
                    "\(action): the device's token was still accepted (\(String(describing: refusedAfter)) s)")
            }
        }
    }

    /// An instance with `authenticated_user` = the demo user: registered with the user's DCR token.
    func registerInstanceOfTheDemoUser(_ platform: SeededPlatform, name: String) async throws -> String {
        let dcrClient = platform.credentials.dcrClientID
        let redirect = DemoSeeder.dcrRedirectURI
        let authorization = try await platform.authorize(clientID: dcrClient, redirectURI: redirect, scope: "dcr")
        let tokens = try expect(
            try await platform.redeem(authorization, clientID: dcrClient, redirectURI: redirect), 200, "DCR token")
        let registered = try expect(
            try await platform.http.postJSON(
                "\(platform.endpoints.gateway)/t/\(platform.endpoints.tenant)/register",
                #"{"client_name":"\#(name)","redirect_uris":["\#(redirect)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"scope":"openid orders:read","dpop_bound_access_tokens":true}"#,
                headers: platform.bearer(tokens.json["access_token"] as? String ?? "")), 201, "register \(name)")
        return try required(registered.json["client_id"] as? String, "client_id")
    }

    /// Confirms `action` (`sign-out`, `remove`) for `clientID` on the account page, signed in as the demo user.
    func accountAction(_ platform: SeededPlatform, _ action: String, clientID: String) async throws {
        let path = "\(platform.endpoints.issuer)/account/clients/\(clientID)/\(action)"
        let confirmation = try expect(try await platform.http.get(path), 200, "the \(action) confirmation page")
        let done = try await platform.http.postForm(
            path, [("csrf_token", try required(confirmation.field("csrf_token"), "csrf_token"))])
        try expect(done, 303, "confirm \(action)")
    }

    /// Signs the demo user in for the client and redeems the code with a DPoP proof: DPoP-bound tokens.
    func boundTokens(
        _ platform: SeededPlatform, clientID: String, redirect: String, basic: [(String, String)], key: DPoPProofSigner
    ) async throws -> DemoResponse {
        let code = try await platform.authorize(clientID: clientID, redirectURI: redirect, scope: "openid orders:read")
        let url = platform.endpoints.tokenEndpoint
        var response = try await platform.redeem(
            code, clientID: clientID, redirectURI: redirect,
            headers: basic + [("DPoP", try key.proof(method: "POST", url: url))])
        if response.json["error"] as? String == "use_dpop_nonce" {
            let nonce = response.headers.first(name: "DPoP-Nonce")
            response = try await platform.redeem(
                code, clientID: clientID, redirectURI: redirect,
                headers: basic + [("DPoP", try key.proof(method: "POST", url: url, nonce: nonce))])
        }
        try expect(response, 200, "DPoP-bound tokens")
        #expect(response.json["token_type"] as? String == "DPoP")
        return response
    }

    /// The sidecar's answer to a DPoP request with `token`; a `use_dpop_nonce` challenge is answered once.
    func callAPI(_ platform: SeededPlatform, token: String, key: DPoPProofSigner) async throws -> Int {
        let url = "\(platform.endpoints.sidecar)/v1/orders"
        var response = try await platform.http.get(
            url,
            headers: [
                ("Authorization", "DPoP \(token)"),
                ("DPoP", try key.proof(method: "GET", url: url, accessToken: token)),
            ])
        if response.status == 401, response.headers.first(name: "WWW-Authenticate")?.contains("use_dpop_nonce") == true
        {
            let nonce = response.headers.first(name: "DPoP-Nonce")
            response = try await platform.http.get(
                url,
                headers: [
                    ("Authorization", "DPoP \(token)"),
                    ("DPoP", try key.proof(method: "GET", url: url, accessToken: token, nonce: nonce)),
                ])
        }
        return response.status
    }

    /// Whether the sidecar accepts `token` within 60 s: right after start-up it may still be loading the
    /// issuer's keys or its revocation lists (503).
    func waitUntilAccepted(_ platform: SeededPlatform, token: String, key: DPoPProofSigner) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let status = try await callAPI(platform, token: token, key: key)
            if status == 200 { return true }
            if status != 503 { return false }
            try await Task.sleep(for: .milliseconds(250))
        }
        return false
    }

    /// Seconds until the sidecar refuses `token` (401), or nil when it still accepts it after 30 s.
    func secondsUntilRefused(_ platform: SeededPlatform, token: String, key: DPoPProofSigner) async throws -> Double? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(30) {
            if try await callAPI(platform, token: token, key: key) == 401 {
                let elapsed = ContinuousClock.now - start
                return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }
}
