import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

/// The business counters on the management port move with real requests (each test has its own tenant,
/// so its series are its own although the registry is shared by the process).
@Suite struct TokenServiceMetricsTests {
    func metrics(_ fixture: TokenServiceHarness) async throws -> String {
        try await ManagementClient(port: fixture.managementPort).execute(uri: "/metrics").text
    }

    @Test func tokensIssuedAndRevocationsAreCountedByGrantAndKind() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            for _ in 0..<2 {
                try await client.execute(
                    uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: ("svc", secret)),
                    body: TokenRequest.form([("grant_type", "client_credentials")])
                ) { response in #expect(response.status == .ok) }
            }
            // A refused request issues nothing.
            try await client.execute(
                uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: ("svc", "wrong")),
                body: TokenRequest.form([("grant_type", "client_credentials")])
            ) { response in #expect(response.status == .unauthorized) }
            let suite = RevocationIntrospectionUserInfoTests()
            let (app, tokens, _) = try await suite.setUp(client, fixture)
            let refresh = try #require(tokens["refresh_token"] as? String)
            let access = try #require(tokens["access_token"] as? String)
            #expect(try await suite.revoke(client, fixture, token: access, clientID: app.clientID) == 200)
            #expect(try await suite.revoke(client, fixture, token: refresh, clientID: app.clientID) == 200)
            // Already revoked: nothing more is counted.
            #expect(try await suite.revoke(client, fixture, token: refresh, clientID: app.clientID) == 200)

            let text = try await metrics(fixture)
            let tenant = fixture.tenant
            #expect(
                PrometheusText.value(
                    text, #"latchkey_tokens_issued_total{tenant="\#(tenant)",grant_type="client_credentials"}"#) == 2)
            #expect(
                PrometheusText.value(
                    text, #"latchkey_tokens_issued_total{tenant="\#(tenant)",grant_type="authorization_code"}"#) == 1)
            #expect(
                PrometheusText.value(
                    text,
                    #"latchkey_revocations_total{tenant="\#(tenant)",kind="access_token",reason="revocation_request"}"#
                ) == 1)
            #expect(
                PrometheusText.value(
                    text,
                    #"latchkey_revocations_total{tenant="\#(tenant)",kind="refresh_token_family",reason="revocation_request"}"#
                ) == 1)
            // Request metrics under Prometheus names: counters end in _total, durations in _seconds.
            let names = PrometheusText.names(text)
            #expect(names.contains("latchkey_http_requests_total"))
            #expect(names.contains("latchkey_http_request_duration_seconds_bucket"))
            #expect(!names.contains { $0.hasPrefix("hb_") || $0.hasPrefix("http_server_") })
            #expect(
                PrometheusText.value(
                    text, #"latchkey_http_requests_total{route="/t/{tenant}/token",method="POST",status="401"}"#)
                    ?? 0 >= 1)
        }
    }

    @Test func signInFailuresAreCountedByReason() async throws {
        try await TokenServiceHarness.run(configure: SignInPageSecurityTests.trustLoopback) { client, fixture in
            let app = try await fixture.insertPublicApp()
            try await fixture.insertUser(username: "alice", password: AuthorizeFlowTests.password)
            var browser = PageBrowser(client)
            let page = try await SignInPageSecurityTests.signInPage(&browser, fixture, app: app)
            let wrong = try await SignInPageSecurityTests.attempt(&browser, fixture, page: page, "alice", "not-it-1234")
            #expect(wrong.status == 401)
            let unknown = try await SignInPageSecurityTests.attempt(&browser, fixture, page: page, "bob", "guess-1234")
            #expect(unknown.status == 401)
            let empty = try await SignInPageSecurityTests.attempt(&browser, fixture, page: page, "alice", "")
            #expect(empty.status == 400)
            let right = try await SignInPageSecurityTests.attempt(
                &browser, fixture, page: page, "alice", AuthorizeFlowTests.password)
            #expect(right.status == 302)

            let text = try await metrics(fixture)
            let tenant = fixture.tenant
            #expect(
                PrometheusText.value(
                    text, #"latchkey_sign_in_failures_total{tenant="\#(tenant)",reason="invalid_credentials"}"#) == 2)
            #expect(
                PrometheusText.value(
                    text, #"latchkey_sign_in_failures_total{tenant="\#(tenant)",reason="invalid_request"}"#) == 1)
            #expect(
                PrometheusText.value(text, #"latchkey_sign_in_failures_total{tenant="\#(tenant)",reason="throttled"}"#)
                    == nil)
        }
    }
}
