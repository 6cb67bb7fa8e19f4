import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import TokenService

@Suite struct RefreshTokenGrantTests {
    /// Runs the code flow for a fresh public DPoP app and returns it with its first refresh token.
    static func signedIn(_ client: any TestClientProtocol, _ fixture: TokenServiceHarness, id: String = "app")
        async throws -> (NativeApp, String)
    {
        let app = try await AuthorizationCodeGrantTests.publicApp(fixture, id: id)
        let user = try await fixture.insertUser(username: "user-\(id)")
        let verifier = PKCE.generateVerifier()
        let code = try await fixture.insertCode(clientID: app.clientID, userID: user, verifier: verifier)
        let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
        #expect(status == 200)
        return (app, try #require(json["refresh_token"] as? String))
    }

    @Test func rotationIssuesANewBoundPair() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, first) = try await Self.signedIn(client, fixture)
            let (status, json) = try await app.refresh(client, fixture, token: first)
            #expect(status == 200, "\(json)")
            #expect(json["token_type"] as? String == "DPoP")
            let second = try #require(json["refresh_token"] as? String)
            #expect(second != first)
            let claims = try await fixture.verifyAccessToken(
                try #require(json["access_token"] as? String), client: client)
            #expect(claims.cnf?.jkt == app.dpop.jkt)
            #expect(try await app.refresh(client, fixture, token: second).0 == 200)
            let events = try await fixture.outboxPayloads(type: .tokenIssued).map {
                try CloudEvent<TokenIssued>.decode(from: Data($0.utf8)).data
            }
            #expect(events.map(\.grantType) == [.authorizationCode, .refreshToken, .refreshToken])
            #expect(Set(events.compactMap(\.refreshFamilyID)).count == 1)
        }
    }

    @Test func reuseOfARotatedTokenRevokesTheFamilyAndEmitsAnEvent() async throws {
        // Without the concurrent-refresh grace: any second use of a rotated token is reuse.
        try await TokenServiceHarness.run(policy: #"{"token_lifetimes":{"refresh_grace":0}}"#) { client, fixture in
            let (app, first) = try await Self.signedIn(client, fixture)
            let (_, json) = try await app.refresh(client, fixture, token: first)
            let second = try #require(json["refresh_token"] as? String)
            let (reuse, reuseJSON) = try await app.refresh(client, fixture, token: first)
            #expect(reuse == 400)
            #expect(reuseJSON["error"] as? String == "invalid_grant")
            // The legitimate successor died with its family.
            #expect(try await app.refresh(client, fixture, token: second).1["error"] as? String == "invalid_grant")
            let detected = try await fixture.outboxPayloads(type: .refreshTokenReuseDetected)
            #expect(detected.count == 1)
            let event = try CloudEvent<RefreshTokenReuseDetected>.decode(from: Data(detected[0].utf8))
            #expect(event.data.familyRevoked)
            #expect(event.data.jkt == app.dpop.jkt)
            #expect(!detected[0].contains(first))
        }
    }

    @Test func concurrentRefreshWithinTheGraceGetsTheSameSuccessor() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, first) = try await Self.signedIn(client, fixture)
            let (status1, json1) = try await app.refresh(client, fixture, token: first)
            let (status2, json2) = try await app.refresh(client, fixture, token: first)
            #expect(status1 == 200 && status2 == 200, "\(json2)")
            let successor = try #require(json1["refresh_token"] as? String)
            #expect(json2["refresh_token"] as? String == successor)
            #expect(json2["access_token"] as? String != json1["access_token"] as? String)
            #expect(try await fixture.outboxPayloads(type: .refreshTokenReuseDetected).isEmpty)
            // The shared successor rotates normally; once it has, the first token is plain reuse again.
            #expect(try await app.refresh(client, fixture, token: successor).0 == 200)
            #expect(try await app.refresh(client, fixture, token: first).1["error"] as? String == "invalid_grant")
            #expect(try await fixture.outboxPayloads(type: .refreshTokenReuseDetected).count == 1)
        }
    }

    @Test func concurrentRefreshWithAnotherKeyRevokesTheFamily() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, first) = try await Self.signedIn(client, fixture)
            let (_, json) = try await app.refresh(client, fixture, token: first)
            let successor = try #require(json["refresh_token"] as? String)
            let thief = DPoPProofSigner(key: try SigningKey.generate(.es256))
            #expect(
                try await app.refresh(client, fixture, token: first, signer: thief).1["error"] as? String
                    == "invalid_grant")
            #expect(try await app.refresh(client, fixture, token: successor).1["error"] as? String == "invalid_grant")
            #expect(try await fixture.outboxPayloads(type: .refreshTokenReuseDetected).count == 1)
        }
    }

    @Test func boundRefreshTokenNeedsTheSameKey() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, token) = try await Self.signedIn(client, fixture)
            let thief = DPoPProofSigner(key: try SigningKey.generate(.es256))
            #expect(
                try await app.refresh(client, fixture, token: token, signer: thief).1["error"] as? String
                    == "invalid_dpop_proof")
            #expect(
                try await app.refresh(client, fixture, token: token, withProof: false).1["error"] as? String
                    == "invalid_dpop_proof")
            // Neither attempt spent the token.
            #expect(try await app.refresh(client, fixture, token: token).0 == 200)
        }
    }

    @Test func revokedClientsAndOtherClientsCannotRefresh() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, token) = try await Self.signedIn(client, fixture)
            let (other, _) = try await Self.signedIn(client, fixture, id: "other")
            let (status, json) = try await other.refresh(client, fixture, token: token)
            #expect(status == 400)
            #expect(json["error"] as? String == "invalid_grant")
            try await fixture.setClientStatus(app.clientID, .revoked)
            #expect(try await app.refresh(client, fixture, token: token).0 == 401)
            #expect(try await app.refresh(client, fixture, token: "garbage").0 == 401)
        }
    }
}
