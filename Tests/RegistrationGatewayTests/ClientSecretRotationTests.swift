import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// Client secret rotation: the admin route, and RFC 7592 PUT within the rotation window, both with overlap.
@Suite struct ClientSecretRotationTests {
    static let confidential =
        #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"client_secret_basic"}"#

    func adminToken(_ h: GatewayHarness) async throws -> String {
        try await h.dcrToken(sub: "admin-client", scope: "admin", audience: "https://admin.latchkey.test")
    }

    /// The stored secret hashes of a client: current, previous, and until when the previous one counts.
    static func secrets(_ h: GatewayHarness, _ clientID: String) async throws -> (String?, String?, Date?) {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(h.tenant) { connection in
                let rows = try await connection.query(
                    """
                    SELECT client_secret_hash, previous_client_secret_hash, previous_client_secret_expires_at
                    FROM clients WHERE client_id = \(clientID)
                    """, logger: database.logger)
                for try await row in rows.decode((String?, String?, Date?).self) { return row }
                return (nil, nil, nil)
            }
        }
    }

    @Test func anAdministratorRotatesASecretAndTheOldOneOverlaps() async throws {
        let h = try await GatewayHarness.make(
            policy: #"{"client_secret_lifetime":2592000,"client_secret_overlap":3600}"#)
        let admin = try await adminToken(h)
        let dcr = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let registered = try await client.send(
                .post, "/t/\(h.tenant)/register", token: dcr, json: Self.confidential)
            let clientID = try #require(registered.json["client_id"] as? String)
            let first = try #require(registered.json["client_secret"] as? String)
            let path = "/admin/tenants/\(h.tenant)/clients/\(clientID)/rotate-secret"
            let rotated = try await client.send(.post, path, token: admin)
            #expect(rotated.status == .ok, "\(String(buffer: rotated.body))")
            #expect(rotated.headers[.cacheControl] == "no-store")
            let second = try #require(rotated.json["client_secret"] as? String)
            #expect(second != first)
            let expires = try #require(rotated.json["client_secret_expires_at"] as? Int)
            #expect(abs(Double(expires) - Date().timeIntervalSince1970 - 2_592_000) < 60)
            #expect(rotated.json["previous_secret_expires_at"] as? String != nil)

            let (current, previous, until) = try await Self.secrets(h, clientID)
            #expect(current == GatewayHarness.hasher.hash(second))
            #expect(previous == GatewayHarness.hasher.hash(first))
            let overlapEnd = try #require(until)
            #expect(abs(overlapEnd.timeIntervalSinceNow - 3600) < 60)

            let publicClient = try await client.send(
                .post, "/t/\(h.tenant)/register", token: dcr,
                json: #"{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none"}"#)
            let publicID = try #require(publicClient.json["client_id"] as? String)
            let noSecret = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/\(publicID)/rotate-secret", token: admin)
            #expect(noSecret.status == .badRequest)
            let unknown = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/no-such-client/rotate-secret", token: admin)
            #expect(unknown.status == .notFound)
            #expect(try await client.send(.post, path, token: dcr).status != .ok)
        }
        let updates = try await h.outboxPayloads(.clientUpdated)
        #expect(updates.count == 1)
        let event = try CloudEvent<ClientUpdated>.decode(from: Data(updates[0].utf8)).data
        #expect(event.secretRotated && !event.registrationTokenRotated && event.changedFields.isEmpty)
        #expect(!updates[0].contains("lk_cs_"))
    }

    @Test func withoutOverlapTheOldSecretStopsAtOnce() async throws {
        let h = try await GatewayHarness.make(policy: #"{"client_secret_overlap":0}"#)
        let admin = try await adminToken(h)
        let dcr = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let registered = try await client.send(
                .post, "/t/\(h.tenant)/register", token: dcr, json: Self.confidential)
            let clientID = try #require(registered.json["client_id"] as? String)
            let rotated = try await client.send(
                .post, "/admin/tenants/\(h.tenant)/clients/\(clientID)/rotate-secret", token: admin)
            #expect(rotated.status == .ok)
            #expect(rotated.json["previous_secret_expires_at"] == nil)
            #expect(rotated.json["client_secret_expires_at"] as? Int == 0)
            let (_, previous, until) = try await Self.secrets(h, clientID)
            #expect(previous == nil && until == nil)
        }
    }

    @Test func anRFC7592UpdateIssuesANewSecretOnlyWithinTheRotationWindow() async throws {
        // Secrets live 1 day; a PUT within 2 days of expiry (always, here) rotates, and one outside does not.
        let h = try await GatewayHarness.make(
            policy: #"{"client_secret_lifetime":86400,"client_secret_rotation_window":172800}"#)
        let dcr = try await h.dcrToken()
        try await GatewayHarness.withApp { client in
            let registered = try await client.send(
                .post, "/t/\(h.tenant)/register", token: dcr, json: Self.confidential)
            let clientID = try #require(registered.json["client_id"] as? String)
            let first = try #require(registered.json["client_secret"] as? String)
            let rat = try #require(registered.json["registration_access_token"] as? String)
            let body =
                #"{"client_id":"\#(clientID)","client_secret":"\#(first)","redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"client_secret_basic"}"#
            let updated = try await client.send(.put, "/t/\(h.tenant)/register/\(clientID)", token: rat, json: body)
            #expect(updated.status == .ok, "\(String(buffer: updated.body))")
            let second = try #require(updated.json["client_secret"] as? String)
            #expect(second != first)
            #expect(updated.json["client_secret_expires_at"] as? Int ?? 0 > Int(Date().timeIntervalSince1970))
            let (current, previous, _) = try await Self.secrets(h, clientID)
            #expect(current == GatewayHarness.hasher.hash(second) && previous == GatewayHarness.hasher.hash(first))

            // The old secret still identifies the client in a PUT during the overlap.
            let rat2 = try #require(updated.json["registration_access_token"] as? String)
            try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(h.tenant) { connection in
                    try await connection.query(
                        "UPDATE clients SET client_secret_expires_at = now() + interval '30 days' WHERE client_id = \(clientID)",
                        logger: database.logger)
                }
            }
            let outside = try await client.send(.put, "/t/\(h.tenant)/register/\(clientID)", token: rat2, json: body)
            #expect(outside.status == .ok, "\(String(buffer: outside.body))")
            #expect(outside.json["client_secret"] == nil)
        }
        let events = try await h.outboxPayloads(.clientUpdated)
            .map { try CloudEvent<ClientUpdated>.decode(from: Data($0.utf8)).data.secretRotated }
        #expect(events == [true, false])
    }
}
