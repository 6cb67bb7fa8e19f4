import Foundation
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import LatchkeyCLI

/// A signed-in user's SSO cookie does not hand codes to clients they never approved: a crafted
/// `/authorize` link naming another user's instance or any client not marked first-party gets the
/// consent page, never a code.
@Suite struct ConsentAttackTests {
    @Test func ssoSessionAloneGetsNoCodeForAnotherUsersInstanceOrAnUnflaggedClient() async throws {
        try await SeededPlatform.run { platform in
            // Another user signs up and registers instances; their own instance passes on SSO (the story checks it).
            let story = try await platform.mobileStory()
            let dcrRedirect = DemoSeeder.dcrRedirectURI

            // The demo user signs in through the tenant's first-party DCR client: no consent page.
            let signedIn = try await platform.authorize(
                clientID: platform.credentials.dcrClientID, redirectURI: dcrRedirect, scope: "dcr",
                extra: [("prompt", "login")],
                consent: nil)
            #expect(
                signedIn.consentPage == nil && signedIn.code != nil,
                "\(signedIn.response.status) \(signedIn.response.body.prefix(200))")
            let silent = try await platform.authorize(
                clientID: platform.credentials.dcrClientID, redirectURI: dcrRedirect, scope: "dcr", consent: nil)
            #expect(silent.consentPage == nil && silent.code != nil, "the first-party DCR client must stay prompt-free")

            // The attack: the demo user's browser follows a link naming the other user's instance.
            let victim = try await platform.authorize(
                clientID: story.templateInstanceID, redirectURI: dcrRedirect, scope: "openid orders:read", consent: nil)
            #expect(victim.code == nil, "a code went to another user's instance without consent")
            let page = try #require(victim.consentPage, "\(victim.response.status) \(victim.response.location ?? "")")
            #expect(page.body.contains("registered by another user"))
            #expect(page.headers.first(name: "X-Frame-Options") == "DENY")
            let csp = page.headers.first(name: "Content-Security-Policy") ?? ""
            #expect(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"), "\(csp)")
            let none = try await platform.authorize(
                clientID: story.templateInstanceID, redirectURI: dcrRedirect, scope: "openid orders:read",
                extra: [("prompt", "none")], consent: nil)
            #expect(none.code == nil && none.error == "consent_required", "\(none.response.location ?? "")")
            let denied = try await platform.authorize(
                clientID: story.templateInstanceID, redirectURI: dcrRedirect, scope: "openid orders:read",
                consent: "deny")
            #expect(
                denied.code == nil && denied.error == "access_denied"
                    && denied.response.redirectParameters["state"] == "attack")

            // An administrator's client that is not marked first-party asks too; Allow then issues the code.
            let admin = try await platform.adminToken()
            let redirect = "https://shop.example.com/cb"
            let web = try await platform.createClient(
                #"{"client_name":"Partner shop","redirect_uris":["\#(redirect)"],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","grant_types":["authorization_code"],"scope":"openid orders:read"}"#,
                adminToken: admin)
            #expect(web.json["first_party"] as? Bool == false)
            let webID = web.json["client_id"] as? String ?? ""
            let asked = try await platform.authorize(
                clientID: webID, redirectURI: redirect, scope: "openid", consent: nil)
            #expect(asked.code == nil && asked.consentPage?.body.contains("Partner shop") == true)
            let allowed = try await platform.authorize(clientID: webID, redirectURI: redirect, scope: "openid")
            #expect(allowed.consentPage != nil && allowed.code != nil)
            let tokens = try await platform.redeem(
                allowed, clientID: webID, redirectURI: redirect,
                headers: platform.basic(webID, web.json["client_secret"] as? String ?? ""))
            #expect(tokens.status == 200, "\(tokens.body.prefix(200))")
        }
    }

    @Test func onlyAnAdministratorMarksAClientFirstParty() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            let dcr = try await platform.http.get(
                "\(platform.adminBase)/clients/\(platform.credentials.dcrClientID)", headers: platform.bearer(admin))
            #expect(dcr.json["first_party"] as? Bool == true)

            let minted = try expect(
                try await platform.http.postJSON(
                    "\(platform.adminBase)/initial-access-tokens", #"{"uses":2}"#, headers: platform.bearer(admin)),
                201, "initial access token")
            let iat = platform.bearer(minted.json["initial_access_token"] as? String ?? "")
            let claimed = try await platform.http.postJSON(
                "\(platform.endpoints.gateway)/t/demo/register",
                #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"first_party":true}"#,
                headers: iat)
            #expect(
                claimed.status == 400 && claimed.json["error"] as? String == "invalid_client_metadata",
                "\(claimed.body.prefix(200))")
            let registered = try expect(
                try await platform.http.postJSON(
                    "\(platform.endpoints.gateway)/t/demo/register",
                    #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"scope":"openid"}"#,
                    headers: iat), 201, "register")
            let clientID = registered.json["client_id"] as? String ?? ""
            let url = "\(platform.endpoints.gateway)/t/demo/register/\(clientID)"
            let rewrite = try await platform.http.send(
                "PUT", url,
                headers: platform.bearer(registered.json["registration_access_token"] as? String ?? "") + [
                    ("Content-Type", "application/json")
                ],
                body:
                    #"{"client_id":"\#(clientID)","redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"first_party":true}"#
            )
            #expect(rewrite.status == 400 && rewrite.json["error"] as? String == "invalid_client_metadata")
            let stored = try await platform.http.get(
                "\(platform.adminBase)/clients/\(clientID)", headers: platform.bearer(admin))
            #expect(stored.json["first_party"] as? Bool == false)

            // The registered client still meets the consent page after the demo user signs in.
            let authorization = try await platform.authorize(
                clientID: clientID, redirectURI: "com.example.app:/cb", scope: "openid", consent: nil)
            #expect(authorization.code == nil && authorization.consentPage != nil)
        }
    }
}
