import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// The admin API's user list and user deletion.
@Suite struct AdminUserManagementTests {
    let grants = UserRevocationTests()

    func insertUser(_ h: GatewayHarness, _ name: String, email: String?, status: String = "active") async throws
        -> UUID
    {
        let id = UUID()
        _ = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO users (tenant_id, user_id, username, email, status, password_hash)
                    VALUES (\(h.tenant), \(id), \(name), \(email), \(status), 'scrypt$x')
                    """, logger: database.logger)
            }
        }
        return id
    }

    @Test func listsAndSearchesUsersWithPaging() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken(sub: "api-admin", scope: "admin", audience: "https://admin.latchkey.test")
        let carol = try await insertUser(h, "Carol_1", email: "carol@shop.example")
        _ = try await insertUser(h, "dave", email: "DAVE@Shop.example", status: "disabled")
        _ = try await insertUser(h, "erin", email: nil)
        let base = "/admin/tenants/\(h.tenant)/users"
        try await GatewayHarness.withApp { client in
            _ = try await h.registerInstance(client, name: "Phone")
            #expect(try await client.send(.get, base).status == .unauthorized)
            let all = try await client.send(.get, base, token: token)
            #expect(all.status == .ok, "\(String(buffer: all.body))")
            let users = try #require(all.json["users"] as? [[String: Any]])
            #expect(users.count == 4)
            let owner = try #require(users.first { $0["user_id"] as? String == h.user.uuidString.lowercased() })
            #expect(owner["active_clients"] as? Int == 1)
            #expect(users.allSatisfy { $0["password_hash"] == nil })

            let shop = try await client.send(.get, base + "?q=SHOP.example", token: token)
            let found = try #require(shop.json["users"] as? [[String: Any]]).compactMap { $0["username"] as? String }
            #expect(Set(found) == ["Carol_1", "dave"])
            // LIKE wildcards are literal.
            let underscore = try await client.send(.get, base + "?q=l_1", token: token)
            #expect(
                (underscore.json["users"] as? [[String: Any]])?.map { $0["user_id"] as? String } == [
                    carol.uuidString.lowercased()
                ])
            let percent = try await client.send(.get, base + "?q=%25", token: token)
            #expect((percent.json["users"] as? [[String: Any]])?.isEmpty == true)
            let disabled = try await client.send(.get, base + "?status=disabled", token: token)
            #expect((disabled.json["users"] as? [[String: Any]])?.map { $0["username"] as? String } == ["dave"])

            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await client.send(
                    .get, base + "?limit=3" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
                #expect(page.status == .ok)
                seen += (page.json["users"] as? [[String: Any]] ?? []).compactMap { $0["user_id"] as? String }
                cursor = page.json["next_cursor"] as? String
            } while cursor != nil
            #expect(seen.count == 4 && Set(seen).count == 4)

            for bad in ["?status=gone", "?limit=0", "?limit=x", "?cursor=%2A%2A", "?q="] {
                #expect(try await client.send(.get, base + bad, token: token).status == .badRequest, "\(bad)")
            }
        }
    }

    @Test func deletingAUserRevokesTheirInstancesEndsTheirGrantsAndAnonymisesThem() async throws {
        let h = try await GatewayHarness.make()
        let other = try await grants.addUser(h)
        let token = try await h.dcrToken(sub: "api-admin", scope: "admin", audience: "https://admin.latchkey.test")
        let web = try await h.createAdminClient(scope: "openid").id
        _ = try await grants.seedGrants(h, user: h.user, clientID: web)
        _ = try await grants.seedGrants(h, user: other, clientID: web)
        let path = "/admin/tenants/\(h.tenant)/users/\(h.user.uuidString)"
        try await GatewayHarness.withApp { client in
            let instance = try await h.registerInstance(client, name: "Phone")
            #expect(try await client.send(.delete, path, token: token, json: "{}").status == .badRequest)
            #expect(
                try await client.send(
                    .delete, "/admin/tenants/\(h.tenant)/users/\(UUID())", token: token,
                    json: #"{"reason":"x"}"#
                ).status == .notFound)
            let deleted = try await client.send(.delete, path, token: token, json: #"{"reason":"left the company"}"#)
            #expect(deleted.status == .ok, "\(String(buffer: deleted.body))")
            #expect(deleted.json["status"] as? String == "deleted")
            #expect(deleted.json["revoked"] as? [String] == [instance])
            #expect(deleted.json["access_tokens_revoked"] as? Int == 1)
            #expect(try await h.clientStatus(instance) == "revoked")
            #expect(
                try await client.send(.delete, path, token: token, json: #"{"reason":"again"}"#).status == .notFound)
            #expect(
                try await client.send(.post, path + "/disable", token: token, json: #"{"reason":"x"}"#).status
                    == .notFound)
            #expect(
                try await client.send(.post, path + "/enable", token: token, json: #"{"reason":"x"}"#).status
                    == .notFound)
            let listed = try await client.send(.get, "/admin/tenants/\(h.tenant)/users", token: token)
            #expect(
                (listed.json["users"] as? [[String: Any]])?.contains {
                    $0["user_id"] as? String == h.user.uuidString.lowercased()
                }
                    == false)
            let revoked = try await grants.events(h, .clientRevoked).compactMap {
                ($0["data"] as? [String: Any])?["client_id"] as? String
            }
            #expect(revoked.contains(instance))
        }
        #expect(try await grants.liveGrants(h, user: h.user) == [0, 0, 0])
        #expect(try await grants.liveGrants(h, user: other) == [1, 1, 1])
        #expect(try await grants.userStatus(h, user: h.user) == "deleted")
        let row: (String, String?, String?) = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    "SELECT username, email, password_hash FROM users WHERE user_id = \(h.user)",
                    logger: database.logger)
                for try await row in rows.decode((String, String?, String?).self) { return row }
                return ("", "x", "x")
            }
        }
        #expect(row.0 == "deleted:" + h.user.uuidString.lowercased())
        #expect(row.1 == nil && row.2 == nil)
        let disabled = try await grants.events(h, .userDisabled)
        #expect(disabled.count == 1)
        #expect(((disabled.first?["data"] as? [String: Any])?["reason"] as? String)?.hasPrefix("user deleted:") == true)
    }
}
