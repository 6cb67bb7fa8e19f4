import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

@Suite struct RevocationIntrospectionUserInfoTests {
    func introspect(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, token: String, as caller: (String, String)
    ) async throws -> [String: Any] {
        try await client.execute(
            uri: "/t/\(fixture.tenant)/introspect", method: .post, headers: TokenRequest.headers(basic: caller),
            body: TokenRequest.form([("token", token)])
        ) { response in
            #expect(response.status == .ok)
            #expect(response.headers[.cacheControl] == "no-store")
            return TokenRequest.json(response)
        }
    }

    func revoke(_ client: any TestClientProtocol, _ fixture: TokenServiceHarness, token: String, clientID: String)
        async throws -> Int
    {
        try await client.execute(
            uri: "/t/\(fixture.tenant)/revoke", method: .post, headers: TokenRequest.headers(),
            body: TokenRequest.form([("token", token), ("client_id", clientID)])
        ) { response in Int(response.status.code) }
    }

    /// A signed-in public DPoP app's tokens plus a confidential resource server allowed to introspect.
    func setUp(_ client: any TestClientProtocol, _ fixture: TokenServiceHarness) async throws -> (
        NativeApp, [String: Any], (String, String)
    ) {
        let rsSecret = try #require(try await fixture.insertClient("resource-server", scope: "api introspect"))
        let app = try await AuthorizationCodeGrantTests.publicApp(fixture)
        let user = try await fixture.insertUser()
        let verifier = PKCE.generateVerifier()
        let code = try await fixture.insertCode(
            clientID: app.clientID, userID: user, scope: "openid profile email", verifier: verifier)
        let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
        #expect(status == 200)
        return (app, json, ("resource-server", rsSecret))
    }

    @Test func introspectionReflectsRevocationAndClientStatus() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, tokens, rs) = try await setUp(client, fixture)
            let access = try #require(tokens["access_token"] as? String)
            let refresh = try #require(tokens["refresh_token"] as? String)
            let active = try await introspect(client, fixture, token: access, as: rs)
            #expect(active["active"] as? Bool == true)
            #expect(active["client_id"] as? String == app.clientID)
            #expect(active["token_type"] as? String == "DPoP")
            #expect((active["cnf"] as? [String: String])?["jkt"] == app.dpop.jkt)
            #expect(
                try await introspect(client, fixture, token: refresh, as: rs)["token_type"] as? String
                    == "refresh_token")
            #expect(try await introspect(client, fixture, token: "garbage", as: rs).keys.sorted() == ["active"])
            // A revoked client's tokens go inactive at once.
            try await fixture.setClientStatus(app.clientID, .revoked)
            #expect(try await introspect(client, fixture, token: access, as: rs)["active"] as? Bool == false)
            #expect(try await introspect(client, fixture, token: refresh, as: rs)["active"] as? Bool == false)
        }
    }

    @Test func revokingARefreshTokenEndsItsFamilyAndAccessTokens() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, tokens, rs) = try await setUp(client, fixture)
            let access = try #require(tokens["access_token"] as? String)
            let refresh = try #require(tokens["refresh_token"] as? String)
            // Another client's revocation request is answered 200 and changes nothing.
            try await fixture.insertClient("stranger", authMethod: .noAuthentication, grantTypes: [.authorizationCode])
            #expect(try await revoke(client, fixture, token: refresh, clientID: "stranger") == 200)
            #expect(try await introspect(client, fixture, token: refresh, as: rs)["active"] as? Bool == true)
            #expect(try await revoke(client, fixture, token: refresh, clientID: app.clientID) == 200)
            #expect(try await introspect(client, fixture, token: refresh, as: rs)["active"] as? Bool == false)
            #expect(try await introspect(client, fixture, token: access, as: rs)["active"] as? Bool == false)
            #expect(try await app.refresh(client, fixture, token: refresh).1["error"] as? String == "invalid_grant")
            // Unknown and repeated revocations are 200 (RFC 7009 §2.2).
            #expect(try await revoke(client, fixture, token: refresh, clientID: app.clientID) == 200)
            #expect(try await revoke(client, fixture, token: "unknown", clientID: app.clientID) == 200)
            let events = try await fixture.outboxPayloads(type: .tokenRevoked)
            #expect(events.count == 1)
            #expect(!events[0].contains(refresh))
        }
    }

    @Test func revokingAnAccessTokenByItself() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, tokens, rs) = try await setUp(client, fixture)
            let access = try #require(tokens["access_token"] as? String)
            #expect(try await revoke(client, fixture, token: access, clientID: app.clientID) == 200)
            #expect(try await introspect(client, fixture, token: access, as: rs)["active"] as? Bool == false)
            #expect(
                try await introspect(client, fixture, token: try #require(tokens["refresh_token"] as? String), as: rs)[
                    "active"] as? Bool == true)
        }
    }

    @Test func introspectionAndRevocationNeedClientAuthentication() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, tokens, _) = try await setUp(client, fixture)
            let access = try #require(tokens["access_token"] as? String)
            // Public clients cannot introspect; no credentials at all is invalid_client.
            let attempts: [(HTTPFields, [(String, String)])] = [
                (TokenRequest.headers(), [("client_id", app.clientID)]),
                (TokenRequest.headers(basic: ("resource-server", "wrong")), []),
                (TokenRequest.headers(), []),
            ]
            for (headers, extra) in attempts {
                try await client.execute(
                    uri: "/t/\(fixture.tenant)/introspect", method: .post, headers: headers,
                    body: TokenRequest.form([("token", access)] + extra)
                ) { response in
                    #expect(response.status == .unauthorized)
                }
            }
            try await client.execute(
                uri: "/t/\(fixture.tenant)/revoke", method: .post, headers: TokenRequest.headers(),
                body: TokenRequest.form([("client_id", app.clientID)])
            ) { response in
                #expect(response.status == .badRequest)
                #expect(TokenRequest.json(response)["error"] as? String == "invalid_request")
            }
            try await client.execute(
                uri: "/t/\(fixture.tenant)/revoke", method: .post, headers: [.contentType: "text/plain"],
                body: ByteBuffer(string: "token=x")
            ) { response in
                #expect(response.status == .unsupportedMediaType)
            }
        }
    }

    @Test func userinfoWithDPoPRefusesBearerDowngradeAndBadProofs() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, tokens, _) = try await setUp(client, fixture)
            let access = try #require(tokens["access_token"] as? String)
            let url = "\(fixture.issuer)/userinfo"
            func call(_ authorization: String, proof: String?) async throws -> (Int, [String: Any]) {
                var headers: HTTPFields = [.authorization: authorization]
                if let proof { headers[HTTPField.Name("DPoP")!] = proof }
                return try await client.execute(uri: "/t/\(fixture.tenant)/userinfo", method: .get, headers: headers) {
                    response in
                    (Int(response.status.code), TokenRequest.json(response))
                }
            }
            let (status, info) = try await call(
                "DPoP \(access)", proof: try app.dpop.proof(method: "GET", url: url, accessToken: access))
            #expect(status == 200, "\(info)")
            #expect(info["preferred_username"] as? String == "alice")
            #expect(info["email"] as? String == "alice@example.test")
            // Nobody vouched for the address: `email_verified` says so, until the account records it.
            #expect(info["email_verified"] as? Bool == false)
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query("UPDATE users SET email_verified = true", logger: fixture.database.logger)
            }
            let (_, verified) = try await call(
                "DPoP \(access)", proof: try app.dpop.proof(method: "GET", url: url, accessToken: access))
            #expect(verified["email_verified"] as? Bool == true)
            #expect(try await call("Bearer \(access)", proof: nil).0 == 401)
            #expect(try await call("DPoP \(access)", proof: try app.dpop.proof(method: "GET", url: url)).0 == 401)
            #expect(try await call("DPoP \(access)", proof: nil).0 == 401)
            let thief = DPoPProofSigner(key: try SigningKey.generate(.es256))
            #expect(
                try await call("DPoP \(access)", proof: try thief.proof(method: "GET", url: url, accessToken: access)).0
                    == 401)
            #expect(try await call("DPoP not-a-token", proof: nil).0 == 401)
            #expect(try await call("Basic abc", proof: nil).0 == 401)
        }
    }
}
