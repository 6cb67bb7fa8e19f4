import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// Self sign-up is a tenant policy switch, off by default in the platform tenant: nobody creates an
/// account next to the platform's administrators unless the policy says so.
@Suite struct SelfSignUpAttackTests {
    static let policyWithoutSignUp =
        #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read","orders:write"],"branding":{"name":"Latchkey Demo"}}"#

    @Test func platformTenantSignUpIsClosedUnlessItsPolicyOpensIt() async throws {
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            // The demo tenant is the platform tenant here; without `self_signup` its sign-up is closed.
            try expect(
                try await platform.http.send(
                    "PUT", "\(platform.adminBase)/policy",
                    headers: platform.bearer(admin) + [("Content-Type", "application/json")],
                    body: Self.policyWithoutSignUp), 200, "policy without self_signup")
            var page = try await signInPage(platform)
            _ = try await eventually(within: .seconds(60)) {
                if page.body.contains("/signup?") { page = try await signInPage(platform) }
                return !page.body.contains("/signup?")
            }
            #expect(page.status == 200)
            #expect(!page.body.contains("/signup?"), "the platform tenant's sign-in page offers sign-up")
            let pending = try #require(page.field("authorization_request"))
            let form = try await platform.http.get(
                "\(platform.endpoints.issuer)/signup?authorization_request=\(pending)")
            #expect(form.status == 403, "sign-up page: \(form.status)")
            let posted = try await platform.http.postForm(
                "\(platform.endpoints.issuer)/signup",
                [
                    ("csrf_token", page.field("csrf_token") ?? ""), ("authorization_request", pending),
                    ("username", "intruder"), ("email", "intruder@example.com"),
                    ("password", "a long enough password 123"),
                ])
            #expect(posted.status == 403, "sign-up post: \(posted.status)")
            #expect(posted.location == nil)
            // Existing users still sign in where sign-up is closed.
            let signedIn = try await platform.authorize(
                clientID: platform.credentials.dcrClientID, redirectURI: DemoSeeder.dcrRedirectURI, scope: "dcr",
                extra: [("prompt", "login")])
            #expect(signedIn.code != nil, "the demo user could not sign in: \(signedIn.response.status)")

            // Another tenant keeps sign-up by default.
            try expect(
                try await platform.http.postJSON(
                    "\(platform.endpoints.gateway)/admin/tenants", #"{"tenant_id":"shop"}"#,
                    headers: platform.bearer(admin)), 201, "tenant shop")
            let shopAdmin = try expect(
                try await platform.http.postJSON(
                    "\(platform.endpoints.gateway)/admin/tenants/shop/clients",
                    #"{"client_name":"Shop app","redirect_uris":["com.shop.app:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"scope":"openid"}"#,
                    headers: platform.bearer(admin)), 201, "shop client")
            var shop = URLComponents(string: "\(platform.endpoints.tokenService)/t/shop/authorize")!
            shop.queryItems = [
                URLQueryItem(name: "response_type", value: "code"),
                URLQueryItem(name: "client_id", value: shopAdmin.json["client_id"] as? String),
                URLQueryItem(name: "redirect_uri", value: "com.shop.app:/cb"),
                URLQueryItem(name: "scope", value: "openid"),
                URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: PKCE.generateVerifier())),
                URLQueryItem(name: "code_challenge_method", value: "S256"),
            ]
            let shopPage = try await platform.http.get(shop.url!.absoluteString)
            #expect(shopPage.status == 200 && shopPage.body.contains("/signup?"), "\(shopPage.status)")
        }
    }

    func signInPage(_ platform: SeededPlatform) async throws -> DemoResponse {
        var query = URLComponents(string: "\(platform.endpoints.issuer)/authorize")!
        query.queryItems = [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: platform.credentials.dcrClientID),
            URLQueryItem(name: "redirect_uri", value: DemoSeeder.dcrRedirectURI),
            URLQueryItem(name: "scope", value: "dcr"),
            URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: PKCE.generateVerifier())),
            URLQueryItem(name: "code_challenge_method", value: "S256"), URLQueryItem(name: "prompt", value: "login"),
        ]
        return try await platform.http.get(query.url!.absoluteString)
    }
}
