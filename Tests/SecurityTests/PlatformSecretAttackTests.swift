import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyCLI

/// Tenant admins never reach platform secrets: upstream client secrets are sealed values, references to
/// the environment or files are the operator's, and outgoing requests go to public https endpoints only.
@Suite struct PlatformSecretAttackTests {
    static func policy(providers: String) -> String {
        #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read","orders:write"],"branding":{"name":"Latchkey Demo"},"upstream_identity_providers":[\#(providers)]}"#
    }

    static func provider(issuer: String, secret: String) -> String {
        #"{"id":"evil","display_name":"Evil IdP","issuer":"\#(issuer)","client_id":"latchkey",\#(secret),"scopes":["openid"]}"#
    }

    @Test func tenantAdminCannotSendPlatformSecretsToItsOwnServer() async throws {
        let listener = try ConnectionCounter()
        defer { listener.stop() }
        try await SeededPlatform.run { platform in
            let admin = try await platform.adminToken()
            func putPolicy(_ body: String) async throws -> DemoResponse {
                try await platform.http.send(
                    "PUT", "\(platform.adminBase)/policy",
                    headers: platform.bearer(admin) + [("Content-Type", "application/json")], body: body)
            }
            // References to the platform's environment or files are refused, whatever the issuer.
            for reference in [
                "env:KEY_ENCRYPTION_KEY", "env:SECRET_HASH_KEY", "env:DATABASE_URL", "env:ADMIN_BOOTSTRAP_KEY",
                "file:/proc/self/environ",
            ] {
                let response = try await putPolicy(
                    Self.policy(
                        providers: Self.provider(
                            issuer: "https://idp.example.com", secret: #""client_secret_ref":"\#(reference)""#)))
                #expect(
                    response.status == 400, "\(reference) accepted: \(response.status) \(response.body.prefix(200))")
                #expect(response.json["error"] as? String == "invalid_request")
            }
            // Plain http and non-public issuers are refused when the policy is written.
            for issuer in ["http://127.0.0.1:\(listener.port)", "http://idp.example.com"] {
                let response = try await putPolicy(
                    Self.policy(providers: Self.provider(issuer: issuer, secret: #""client_secret":"x""#)))
                #expect(response.status == 400, "issuer \(issuer) accepted: \(response.status)")
            }

            // A secret given as a value is sealed: never stored in the policy, never returned.
            let secret = "upstream-secret-" + UUID().uuidString
            let issuer = "https://localhost:\(listener.port)"
            let accepted = try await putPolicy(
                Self.policy(providers: Self.provider(issuer: issuer, secret: #""client_secret":"\#(secret)""#)))
            #expect(accepted.status == 200, "\(accepted.body.prefix(300))")
            #expect(!accepted.body.contains(secret))
            let read = try await platform.http.get(platform.adminBase, headers: platform.bearer(admin))
            #expect(read.status == 200)
            #expect(!read.body.contains(secret) && !read.body.contains("client_secret\""), "\(read.body.prefix(400))")
            // Read as the services' role, under the tenant's Row-Level Security scope.
            var appRole = try TestEnvironment.appDatabase()
            appRole.database = platform.database.database
            let stored = try await withPostgresClient(appRole) { client in
                let database = Database(client: client, logger: TestEnvironment.logger)
                return try await database.withTenantTransaction("demo") { connection in
                    var policies = ""
                    var sealed = Data()
                    for try await text in try await connection.query(
                        "SELECT policy::text FROM tenants WHERE tenant_id = 'demo'", logger: database.logger
                    ).decode(String.self) { policies = text }
                    for try await bytes in try await connection.query(
                        "SELECT sealed FROM upstream_client_secrets", logger: database.logger
                    ).decode(Data.self) { sealed = bytes }
                    return (policies, sealed)
                }
            }
            #expect(!stored.0.contains(secret))
            #expect(!stored.1.isEmpty && stored.1.range(of: Data(secret.utf8)) == nil)

            // The token service refuses to contact an issuer whose name resolves to loopback.
            let link = try await providerLink(platform)
            let start = try await platform.http.get(platform.endpoints.tokenService + link)
            #expect(
                start.status != 302, "the token service redirected to the attacker's provider: \(start.location ?? "")")
            #expect(listener.connections == 0, "the token service connected to \(issuer)")
        }
    }

    /// The "continue with" link of the sign-in page, once the policy change reached the token service.
    func providerLink(_ platform: SeededPlatform) async throws -> String {
        let verifier = PKCE.generateVerifier()
        var query = URLComponents(string: "\(platform.endpoints.issuer)/authorize")!
        query.queryItems = [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: platform.credentials.dcrClientID),
            URLQueryItem(name: "redirect_uri", value: DemoSeeder.dcrRedirectURI),
            URLQueryItem(name: "scope", value: "dcr"),
            URLQueryItem(name: "state", value: "s"),
            URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: verifier)),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
        ]
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let page = try await platform.http.get(query.url!.absoluteString)
            if let range = page.body.range(of: "class=\"provider\" href=\"") {
                return String(page.body[range.upperBound...].prefix { $0 != "\"" }).replacingOccurrences(
                    of: "&amp;", with: "&")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw TestFailure("the sign-in page never showed the provider")
    }
}
