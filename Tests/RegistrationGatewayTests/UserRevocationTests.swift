import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// Revoking a user's clients and disabling a user end the user's sessions and tokens on every client,
/// static ones included, and tell the sidecars.
@Suite struct UserRevocationTests {
    /// A user's session, a refresh token and a live access token on `clientID`, plus an expired access token.
    func seedGrants(_ h: GatewayHarness, user: UUID, clientID: String) async throws -> (refresh: String, jti: String) {
        let refresh = "rt-" + UUID().uuidString
        let jti = "at-" + UUID().uuidString
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO sso_sessions (tenant_id, session_hash, user_id, auth_time, expires_at)
                    VALUES (\(h.tenant), \("s-" + UUID().uuidString), \(user), now(), now() + interval '8 hours')
                    """, logger: database.logger)
                try await connection.query(
                    """
                    INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, client_id, user_id, scope, expires_at)
                    VALUES (\(h.tenant), \(refresh), \(UUID()), \(clientID), \(user), 'openid', now() + interval '1 day')
                    """, logger: database.logger)
                try await connection.query(
                    """
                    INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, expires_at)
                    VALUES (\(h.tenant), \(jti), \(clientID), \(user), now() + interval '10 minutes'),
                           (\(h.tenant), \(jti + "-old"), \(clientID), \(user), now() - interval '1 minute')
                    """, logger: database.logger)
            }
        }
        return (refresh, jti)
    }

    /// Counts of the user's live sessions, active refresh tokens and unrevoked access tokens.
    func liveGrants(_ h: GatewayHarness, user: UUID) async throws -> [Int] {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                var counts: [Int] = []
                let queries: [PostgresQuery] = [
                    "SELECT count(*)::int FROM sso_sessions WHERE user_id = \(user) AND revoked_at IS NULL",
                    "SELECT count(*)::int FROM refresh_tokens WHERE user_id = \(user) AND status = 'active'",
                    "SELECT count(*)::int FROM issued_access_tokens WHERE user_id = \(user) AND revoked_at IS NULL AND expires_at > now()",
                ]
                for query in queries {
                    let rows = try await connection.query(query, logger: database.logger)
                    for try await count in rows.decode(Int.self) { counts.append(count) }
                }
                return counts
            }
        }
    }

    func userStatus(_ h: GatewayHarness, user: UUID) async throws -> String? {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    "SELECT status FROM users WHERE user_id = \(user)", logger: database.logger)
                for try await status in rows.decode(String.self) { return status }
                return nil
            }
        }
    }

    func addUser(_ h: GatewayHarness) async throws -> UUID {
        let other = UUID()
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                try await connection.query(
                    "INSERT INTO users (tenant_id, user_id, username) VALUES (\(h.tenant), \(other), \("bob-\(other)"))",
                    logger: database.logger)
            }
        }
        return other
    }

    func events(_ h: GatewayHarness, _ type: LatchkeyEventType) async throws -> [[String: Any]] {
        try await h.outboxPayloads(type).compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    @Test func revokingAUsersClientsEndsTheirSessionsAndTokensOnStaticClientsToo() async throws {
        let h = try await GatewayHarness.make()
        let other = try await addUser(h)
        let token = try await h.dcrToken(sub: "api-admin", scope: "admin", audience: "https://admin.latchkey.test")
        let web = try await h.createAdminClient(scope: "openid").id
        let (_, jti) = try await seedGrants(h, user: h.user, clientID: web)
        _ = try await seedGrants(h, user: other, clientID: web)
        try await GatewayHarness.withApp { client in
            let instance = try await h.registerInstance(client, name: "Phone")
            let revoked = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/users/\(h.user.uuidString)/revoke-clients", token: token,
                json: #"{"reason":"account stolen"}"#)
            #expect(revoked.status == .ok, "\(String(buffer: revoked.body))")
            #expect(revoked.json["revoked"] as? [String] == [instance])
            #expect(revoked.json["sessions_ended"] as? Int == 1)
            #expect(revoked.json["refresh_tokens_revoked"] as? Int == 1)
            #expect(revoked.json["access_tokens_revoked"] as? Int == 1)
        }
        #expect(try await liveGrants(h, user: h.user) == [0, 0, 0])
        #expect(try await liveGrants(h, user: other) == [1, 1, 1], "another user's grants are untouched")
        #expect(try await h.clientStatus(web) == "active", "the static client itself stays")
        #expect(try await userStatus(h, user: h.user) == "active")
        let tokenEvents = try await events(h, .tokenRevoked)
        #expect(tokenEvents.count == 1)
        let data = try #require(tokenEvents.first?["data"] as? [String: Any])
        #expect(data["client_id"] as? String == web)
        #expect(data["revoked_jtis"] as? [String] == [jti])
        #expect(data["access_tokens_expire_at"] != nil)
        #expect(data["reason"] as? String == "admin")
        #expect((data["user_id"] as? String)?.lowercased() == h.user.uuidString.lowercased())
        let validator = try EventSchemaValidator()
        for payload in try await h.outboxPayloads(.tokenRevoked) {
            #expect(validator.firstError(in: try StrictJSONParser.parse(Array(payload.utf8)), as: .tokenRevoked) == nil)
        }
    }

    @Test func disablingAUserEndsTheirGrantsEmitsUserDisabledAndEnablingUndoesIt() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken(sub: "api-admin", scope: "admin", audience: "https://admin.latchkey.test")
        let web = try await h.createAdminClient(scope: "openid").id
        _ = try await seedGrants(h, user: h.user, clientID: web)
        let base = "/admin/tenants/\(h.tenant)/users/\(h.user.uuidString)"
        try await GatewayHarness.withApp { client in
            let instance = try await h.registerInstance(client, name: "Phone")
            for body in [
                "{}", #"{"reason":""}"#, #"{"reason":"\#(String(repeating: "r", count: 501))"}"#,
                #"{"reason":"a\u0001"}"#,
                #"{"reason":1}"#, "[]", "not json",
            ] {
                let refused = try await client.send(.post, base + "/disable", token: token, json: body)
                #expect(refused.status == .badRequest, "\(body.prefix(20)) → \(refused.status)")
            }
            #expect(try await client.send(.post, base + "/disable", json: #"{"reason":"x"}"#).status == .unauthorized)
            #expect(
                try await client.send(
                    .post, "/admin/tenants/\(h.tenant)/users/\(UUID())/disable", token: token,
                    json: #"{"reason":"x"}"#
                ).status == .notFound)
            #expect(
                try await client.send(
                    .post, "/admin/tenants/\(h.tenant)/users/nope/disable", token: token,
                    json: #"{"reason":"x"}"#
                ).status == .notFound)
            #expect(try await userStatus(h, user: h.user) == "active")

            let disabled = try await client.send(
                .post, base + "/disable", token: token, json: #"{"reason":"account compromised"}"#)
            #expect(disabled.status == .ok, "\(String(buffer: disabled.body))")
            #expect(disabled.json["status"] as? String == "disabled")
            #expect(disabled.json["access_tokens_revoked"] as? Int == 1)
            #expect(try await userStatus(h, user: h.user) == "disabled")
            #expect(try await liveGrants(h, user: h.user) == [0, 0, 0])
            #expect(try await h.clientStatus(instance) == "active", "disabling revokes none of the user's clients")
            #expect(try await h.clientStatus(web) == "active")
            #expect(
                try await client.send(.post, base + "/disable", token: token, json: #"{"reason":"again"}"#).status
                    == .conflict)

            let enabled = try await client.send(
                .post, base + "/enable", token: token, json: #"{"reason":"password reset"}"#)
            #expect(enabled.status == .ok, "\(String(buffer: enabled.body))")
            #expect(enabled.json["status"] as? String == "active")
            #expect(try await userStatus(h, user: h.user) == "active")
            #expect(
                try await client.send(.post, base + "/enable", token: token, json: #"{"reason":"again"}"#).status
                    == .conflict)
        }
        let validator = try EventSchemaValidator()
        for (type, when) in [(LatchkeyEventType.userDisabled, "disabled_at"), (.userEnabled, "enabled_at")] {
            let payloads = try await h.outboxPayloads(type)
            #expect(payloads.count == 1, "\(type)")
            let envelope = try StrictJSONParser.parse(Array((payloads.first ?? "").utf8))
            #expect(validator.firstError(in: envelope, as: type) == nil)
            let event = try #require(
                try JSONSerialization.jsonObject(with: Data((payloads.first ?? "").utf8)) as? [String: Any])
            let data = try #require(event["data"] as? [String: Any])
            #expect(Set(data.keys) == ["tenant", "user_id", "reason", "actor", when])
            #expect((data["user_id"] as? String)?.lowercased() == h.user.uuidString.lowercased())
            #expect((data["actor"] as? [String: Any])?["type"] as? String == "admin")
        }
        #expect(try await events(h, .tokenRevoked).count == 1)
    }
}
