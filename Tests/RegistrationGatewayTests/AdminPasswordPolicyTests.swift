import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// The tenant's password policy on the admin API: user creation, password reset, and the policy itself.
@Suite struct AdminPasswordPolicyTests {
    static let pinPolicy =
        #"{"password_policy":{"min_length":4,"max_length":6,"digits_only":true,"forbid_sequences":true,"max_repeated":3,"max_similar_digits":2,"blocklist":["2580"]}}"#

    func adminToken(_ h: GatewayHarness) async throws -> String {
        try await h.dcrToken(sub: "admin-client", scope: "admin", audience: "https://admin.latchkey.test")
    }

    static func passwordHash(_ h: GatewayHarness, _ user: UUID) async throws -> String? {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection -> String? in
                let rows = try await connection.query(
                    "SELECT password_hash FROM users WHERE user_id = \(user)", logger: database.logger)
                for try await hash in rows.decode(String?.self) { return hash }
                return nil
            }
        }
    }

    @Test func userCreationAppliesThePolicyWithTypedViolations() async throws {
        let h = try await GatewayHarness.make(policy: Self.pinPolicy)
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let path = "/admin/tenants/\(h.tenant)/users"
            let cases: [(String, [String])] = [
                ("12", ["too_short"]), ("8362957", ["too_long"]), ("12ab", ["not_digits"]), ("5432", ["sequence"]),
                ("1111", ["repeated", "similar_digits", "blocklisted"]), ("2580", ["blocklisted"]),
                ("7111", ["similar_digits"]),
            ]
            for (pin, codes) in cases {
                let response = try await client.send(
                    .post, path, token: admin, json: #"{"username":"pin-user","password":"\#(pin)"}"#)
                #expect(response.status == .badRequest, "\(pin)")
                #expect(response.errorCode == "invalid_password")
                #expect(response.json["violations"] as? [String] == codes, "\(pin)")
                #expect((response.json["error_description"] as? String)?.contains(pin) == false)
            }
            let created = try await client.send(
                .post, path, token: admin, json: #"{"username":"pin-user","password":"8362"}"#)
            #expect(created.status == .created, "\(String(buffer: created.body))")
        }
    }

    @Test func anAdministratorResetsAPasswordUnderThePolicy() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let before = try await Self.passwordHash(h, h.user)
        try await GatewayHarness.withApp { client in
            let path = "/admin/tenants/\(h.tenant)/users/\(h.user)/password"
            let weak = try await client.send(.post, path, token: admin, json: #"{"password":"password"}"#)
            #expect(weak.status == .badRequest)
            #expect(weak.errorCode == "invalid_password")
            #expect(weak.json["violations"] as? [String] == ["too_short", "too_few_character_classes", "blocklisted"])
            let sameAsName = try await client.send(
                .post, path, token: admin, json: #"{"password":"alice-\#(h.user)"}"#)
            #expect(sameAsName.json["violations"] as? [String] == ["same_as_username"])
            #expect(try await Self.passwordHash(h, h.user) == before)

            let reset = try await client.send(.post, path, token: admin, json: #"{"password":"a new long passphrase"}"#)
            #expect(reset.status == .noContent, "\(String(buffer: reset.body))")
            let unknown = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/users/\(UUID())/password", token: admin,
                json: #"{"password":"a new long passphrase"}"#)
            #expect(unknown.status == .notFound)
            let dcr = try await h.dcrToken()
            let notAdmin = try await client.send(
                .post, path, token: dcr, json: #"{"password":"a new long passphrase"}"#)
            #expect(notAdmin.status == .unauthorized || notAdmin.status == .forbidden)
        }
        let after = try #require(try await Self.passwordHash(h, h.user))
        #expect(after != before && after.hasPrefix("scrypt$"))
        #expect(PasswordHasher().verify("a new long passphrase", against: after))
        // Only the reset that happened is recorded, naming the user and no password.
        let events = try await h.outboxPayloads(.userPasswordChanged)
        #expect(events.count == 1)
        let event = try TestJSON.object(Data((events.first ?? "").utf8))
        let data = event["data"] as? [String: Any]
        #expect((data?["user_id"] as? String)?.lowercased() == h.user.uuidString.lowercased())
        #expect(data?["method"] as? String == "admin_reset")
        #expect((data?["actor"] as? [String: Any])?["type"] as? String == "admin")
        #expect(!(events.first ?? "").contains("a new long passphrase"))
    }

    @Test func theAdminAPIRefusesAnInconsistentPolicy() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp { client in
            let path = "/admin/tenants/\(h.tenant)/policy"
            for policy in [
                #"{"password_policy":{"min_length":8,"max_length":6}}"#,
                #"{"password_policy":{"max_repeated":-1}}"#,
                #"{"password_policy":{"digits_only":true,"min_character_classes":2}}"#,
                #"{"password_policy":{"min_lenght":4}}"#,
            ] {
                let response = try await client.send(.put, path, token: admin, json: policy)
                #expect(response.status == .badRequest, "\(policy)")
                #expect(response.errorCode == "invalid_request")
                #expect((response.json["error_description"] as? String)?.contains("password_policy") == true)
            }
            let good = try await client.send(.put, path, token: admin, json: Self.pinPolicy)
            #expect(good.status == .ok)
        }
    }
}
