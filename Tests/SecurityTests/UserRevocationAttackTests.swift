import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import LatchkeyCLI

/// A thief holding a user's browser session: revoking the user's clients ends the session and the user's
/// refresh tokens on static clients too, and disabling the user makes sidecars refuse their access tokens
/// within seconds and sign-in refuse them until they are enabled again.
@Suite struct UserRevocationAttackTests {
    static let redirect = "https://shop.example.com/cb"

    @Test func revokingAUsersClientsEndsTheirSessionAndStaticRefreshTokens() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let (clientID, basic) = try await staticClient(platform, admin: admin)
            let signedIn = try await platform.authorize(
                clientID: clientID, redirectURI: Self.redirect, scope: "openid orders:read")
            let tokens = try expect(
                try await platform.redeem(signedIn, clientID: clientID, redirectURI: Self.redirect, headers: basic),
                200, "tokens")
            let refresh = tokens.json["refresh_token"] as? String ?? ""
            let user = try subject(of: tokens.json["access_token"] as? String ?? "")
            #expect(
                try await silentAuthorize(platform, clientID: clientID).redirectParameters["code"] != nil,
                "control: the session cookie yields a code without signing in")

            try expect(
                try await platform.http.postJSON(
                    "\(platform.adminBase)/users/\(user)/revoke-clients", #"{"reason":"account stolen"}"#,
                    headers: platform.bearer(admin)), 200, "revoke the user's clients")

            let again = try await silentAuthorize(platform, clientID: clientID)
            #expect(again.redirectParameters["code"] == nil, "the old session cookie still yields a code")
            #expect(
                again.status == 200 && again.field("csrf_token") != nil && again.body.contains("password"),
                "the sign-in page is not shown again")
            let refreshed = try await platform.http.postForm(
                platform.endpoints.tokenEndpoint, [("grant_type", "refresh_token"), ("refresh_token", refresh)],
                headers: basic)
            #expect(
                refreshed.status == 400 && refreshed.json["error"] as? String == "invalid_grant",
                "the user's refresh token on a static client still works (\(refreshed.status))")
        }
    }

    @Test func disablingAUserRefusesTheirTokensAtTheSidecarAndTheirSignIn() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let (clientID, basic) = try await staticClient(platform, admin: admin)
            let key = DPoPProofSigner(key: try SigningKey.generate(.es256))
            let revocation = TokenRevocationAttackTests()
            let tokens = try await revocation.boundTokens(
                platform, clientID: clientID, redirect: Self.redirect, basic: basic, key: key)
            let access = tokens.json["access_token"] as? String ?? ""
            let user = try subject(of: access)
            #expect(try await revocation.callAPI(platform, token: access, key: key) == 200, "control: the token works")

            try expect(
                try await platform.http.postJSON(
                    "\(platform.adminBase)/users/\(user)/disable", #"{"reason":"account compromised"}"#,
                    headers: platform.bearer(admin)), 200, "disable the user")
            let refusedAfter = try await revocation.secondsUntilRefused(platform, token: access, key: key)
            #expect(
                refusedAfter != nil && refusedAfter! < 5,
                "a disabled user's access token was still accepted (\(String(describing: refusedAfter)) s)")
            let refused = try await platform.authorize(
                clientID: clientID, redirectURI: Self.redirect, scope: "openid orders:read")
            #expect(refused.code == nil, "a disabled user signed in")

            try expect(
                try await platform.http.postJSON(
                    "\(platform.adminBase)/users/\(user)/enable", #"{"reason":"password reset"}"#,
                    headers: platform.bearer(admin)), 200, "enable the user")
            let back = try await platform.authorize(
                clientID: clientID, redirectURI: Self.redirect, scope: "openid orders:read")
            #expect(back.code != nil, "an enabled user cannot sign in")
        }
    }

    /// A static web client with refresh tokens: what revoking the user's dynamic instances never touched.
    func staticClient(_ platform: SeededPlatform, admin: String) async throws -> (String, [(String, String)]) {
        let web = try await platform.createClient(
            #"{"client_name":"Shop","redirect_uris":["\#(Self.redirect)"],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","grant_types":["authorization_code","refresh_token"],"scope":"openid orders:read"}"#,
            adminToken: admin)
        let clientID = web.json["client_id"] as? String ?? ""
        return (clientID, platform.basic(clientID, web.json["client_secret"] as? String ?? ""))
    }

    /// `/authorize` with the browser's cookies and nothing else: a code when the session still counts.
    func silentAuthorize(_ platform: SeededPlatform, clientID: String) async throws -> DemoResponse {
        var query = URLComponents(string: "\(platform.endpoints.issuer)/authorize")!
        query.queryItems = [
            URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientID),
            URLQueryItem(name: "redirect_uri", value: Self.redirect), URLQueryItem(name: "state", value: "attack"),
            URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: PKCE.generateVerifier())),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
            URLQueryItem(name: "scope", value: "openid orders:read"),
        ]
        return try await platform.http.get(query.url!.absoluteString)
    }

    /// The `sub` claim of a JWT, read without verification: only to learn the demo user's id.
    func subject(of jwt: String) throws -> String {
        let parts = jwt.split(separator: ".")
        guard parts.count == 3 else { throw TestFailure("not a JWT") }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload),
            let claims = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let sub = claims["sub"] as? String
        else { throw TestFailure("no sub") }
        return sub
    }
}
