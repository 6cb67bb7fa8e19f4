import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// `GET /admin/tenants/{tenant}/keys` and `POST …/keys/rotate`, and tenants whose tokens are RS256 or EdDSA.
@Suite struct AdminKeyRotationTests {
    func adminToken(_ h: GatewayHarness) async throws -> String {
        try await h.dcrToken(sub: "admin-client", scope: "admin", audience: "https://admin.latchkey.test")
    }

    @Test func rotateStagesOneKeyRecordsTheActorAndListsNoKeyMaterial() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp(keyRotation: true) { client in
            let before = try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: admin)
            #expect(before.status == .ok)
            let active = try #require((before.json["keys"] as? [[String: Any]])?.first)
            #expect(active["status"] as? String == "active" && active["alg"] as? String == "ES256")
            #expect(before.json["signing_algorithm"] as? String == "ES256")

            let rotated = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin, json: #"{"algorithm":"EdDSA"}"#)
            #expect(rotated.status == .created, "\(String(buffer: rotated.body))")
            #expect(rotated.json["status"] as? String == "staged" && rotated.json["alg"] as? String == "EdDSA")
            #expect(rotated.json["staged_by"] as? String == "admin-client")
            #expect(rotated.json["policy_version"] as? Int == 2)
            let stagedKid = try #require(rotated.json["kid"] as? String)

            let again = try await client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin, json: "{}")
            #expect(again.status == .conflict && again.errorCode == "invalid_request")
            #expect(String(buffer: again.body).contains(stagedKid))

            let listed = try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: admin)
            let keys = try #require(listed.json["keys"] as? [[String: Any]])
            #expect(keys.map { $0["status"] as? String } == ["active", "staged"])
            #expect(keys.map { $0["kid"] as? String }.last == stagedKid)
            #expect(listed.json["signing_algorithm"] as? String == "EdDSA")
            let text = String(buffer: listed.body)
            for secret in ["encrypted", "private", "\"d\"", "\"n\"", "\"x\""] {
                #expect(!text.contains(secret), "\(secret)")
            }
            #expect(listed.headers[.cacheControl] == "no-store")

            let tenant = try await client.send(.get, "/admin/tenants/\(h.tenant)", token: admin)
            #expect((tenant.json["policy"] as? [String: Any])?["signing_algorithm"] as? String == "EdDSA")
        }
        let changedBy = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    "SELECT changed_by FROM tenant_policy_versions WHERE tenant_id = \(h.tenant) AND version = 2",
                    logger: database.logger)
                var actors: [String] = []
                for try await actor in rows.decode(String.self) { actors.append(actor) }
                return actors
            }
        }
        #expect(changedBy == ["admin-client"])
    }

    @Test func concurrentRotationsCreateOneStagedKey() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp(keyRotation: true) { client in
            async let first = client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin, json: "{}")
            async let second = client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin, json: "{}")
            let statuses = try await [first.status.code, second.status.code].sorted()
            #expect(statuses == [201, 409])
            let keys =
                try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: admin).json["keys"]
                as? [[String: Any]]
            #expect(keys?.filter { $0["status"] as? String == "staged" }.count == 1)
        }
    }

    /// Hostile bodies, in one app (each case would otherwise hold its own pools on the shared cluster).
    static let hostileBodies: [(body: String, contentType: String, status: Int)] = [
        (#"{"algorithm":"HS256"}"#, "application/json", 400), (#"{"algorithm":"none"}"#, "application/json", 400),
        (#"{"algorithm":"PS256"}"#, "application/json", 400), (#"{"algorithm":"es256"}"#, "application/json", 400),
        (#"{"algorithm":7}"#, "application/json", 400), ("{", "application/json", 400), ("[]", "application/json", 400),
        (#"{"algorithm":"RS256"}"#, "text/plain", 415),
        // The body is required and says exactly what to do: nothing is staged by default or by guesswork.
        ("", "application/json", 400), ("null", "application/json", 400),
        (#"{"algorithm":null}"#, "application/json", 400),
        (#"{"algoritm":"RS256"}"#, "application/json", 400),
        (#"{"algorithm":"RS256","algorithm":"EdDSA"}"#, "application/json", 400),
    ]

    @Test func hostileRotationBodiesAreClearErrors() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        try await GatewayHarness.withApp(keyRotation: true) { client in
            for (body, contentType, status) in Self.hostileBodies {
                let response = try await client.send(
                    .post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin, json: body, contentType: contentType)
                #expect(Int(response.status.code) == status, "\(body): \(String(buffer: response.body))")
                #expect(response.errorCode == "invalid_request", "\(body)")
            }
            let huge = #"{"algorithm":""# + String(repeating: "x", count: 200_000) + #""}"#
            #expect(
                try await client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin, json: huge).status
                    == .contentTooLarge)
            let keys =
                try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: admin).json["keys"]
                as? [[String: Any]]
            #expect(keys?.count == 1)
        }
    }

    @Test func keysNeedAnAdminTokenAndRotationNeedsTheKeyEncryptionKey() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await adminToken(h)
        let dcr = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            #expect(try await client.send(.get, "/admin/tenants/\(h.tenant)/keys").status == .unauthorized)
            #expect(try await client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate").status == .unauthorized)
            #expect(
                try await client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate", token: dcr).status == .forbidden)
            let unavailable = try await client.send(.post, "/admin/tenants/\(h.tenant)/keys/rotate", token: admin)
            #expect(unavailable.status == .serviceUnavailable && unavailable.errorCode == "temporarily_unavailable")
            #expect(try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: admin).status == .ok)
        }
    }

    @Test(arguments: [JWSAlgorithm.rs256, .edDSA])
    func tenantsSigningWithRS256OrEdDSARegisterAndAdministerThroughTheGateway(algorithm: JWSAlgorithm) async throws {
        let h = try await GatewayHarness.make(
            policy: #"{"signing_algorithm":"\#(algorithm.rawValue)"}"#, algorithm: algorithm)
        let dcr = try await h.dcrToken()
        let admin = try await adminToken(h)
        #expect(try CompactJWS(parsing: dcr).header.alg == algorithm.rawValue)
        try await GatewayHarness.withApp { client in
            let registered = try await client.send(
                .post, "/t/\(h.tenant)/register", token: dcr, json: AdminAPITests.native)
            #expect(registered.status == .created, "\(String(buffer: registered.body))")
            #expect(try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: admin).status == .ok)
            // The same claims under another algorithm's header, or HS256 keyed with the public key, fail.
            let jwk = try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await GatewayHarness.signingKeys.publishedKeys(
                        tenant: h.tenant, on: connection, logger: database.logger)
                }
            }.first?.jwk
            let forgeries = try AlgorithmConfusion.forgeries(
                against: try #require(jwk), payload: try CompactJWS(parsing: dcr).payload)
            for (name, token) in forgeries {
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", token: token, json: AdminAPITests.native)
                #expect(response.status == .unauthorized, "register: \(name)")
                #expect(
                    try await client.send(.get, "/admin/tenants/\(h.tenant)/keys", token: token).status
                        == .unauthorized,
                    "admin: \(name)")
            }
        }
    }
}
