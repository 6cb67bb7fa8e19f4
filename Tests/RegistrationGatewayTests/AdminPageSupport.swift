import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// Fixtures of the admin page tests: admin clients, users and instances in the harness tenant.
extension GatewayHarness {
    /// A static confidential client with `scope` and a client secret; answers its id and secret.
    func createAdminClient(scope: String = "admin", status: String = "active") async throws -> (
        id: String, secret: String
    ) {
        let id = "admin-" + UUID().uuidString.lowercased()
        let secret = SecretTokens.generate(prefix: "lk_cs_")
        let metadata =
            #"{"token_endpoint_auth_method":"client_secret_basic","grant_types":["client_credentials"],"scope":"\#(scope)"}"#
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO clients (tenant_id, client_id, status, client_kind, client_type, application_type,
                                         registration_mechanism, metadata, client_secret_hash)
                    VALUES (\(tenant), \(id), \(status), 'static', 'confidential', 'web', 'admin', \(metadata)::jsonb,
                            \(Self.hasher.hash(secret)))
                    """, logger: database.logger)
            }
        }
        return (id, secret)
    }

    /// Another active user of the tenant.
    func createUser(_ username: String) async throws -> UUID {
        let id = UUID()
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await connection.query(
                    "INSERT INTO users (tenant_id, user_id, username) VALUES (\(tenant), \(id), \(username))",
                    logger: database.logger)
            }
        }
        return id
    }

    /// Registers an app instance for `user` (default: the harness user) through the registration endpoint.
    func registerInstance(
        _ client: any TestClientProtocol, name: String, user: UUID? = nil, softwareID: String? = nil
    ) async throws -> String {
        let token = try await dcrToken(sub: (user ?? self.user).uuidString)
        let body = try String(
            decoding: JSONSerialization.data(withJSONObject: [
                "redirect_uris": ["com.example.app:/cb"], "token_endpoint_auth_method": "none", "client_name": name,
            ]), as: UTF8.self)
        let registered = try await client.send(.post, "/t/\(tenant)/register", token: token, json: body)
        #expect(registered.status == .created, "\(String(buffer: registered.body))")
        return try #require(registered.json["client_id"] as? String)
    }

    /// The stored status of a client.
    func clientStatus(_ clientID: String) async throws -> String? {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                let rows = try await connection.query(
                    "SELECT status FROM clients WHERE client_id = \(clientID)", logger: database.logger)
                for try await status in rows.decode(String.self) { return status }
                return nil
            }
        }
    }

    /// The `ClientRevoked` outbox events of one client, as JSON objects.
    func revokedEvents(_ clientID: String) async throws -> [[String: Any]] {
        try await outboxPayloads(.clientRevoked).compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        .filter { $0["subject"] as? String == clientID }
    }

    /// Runs SQL against this tenant's admin sessions (to age them).
    func updateAdminSessions(_ sql: String) async throws {
        try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
            }
        }
    }
}

extension GatewayHarness {
    /// A new browser signed in to this tenant's admin page as `admin`.
    func signedInBrowser(_ client: any TestClientProtocol, as admin: (id: String, secret: String)) async throws
        -> PageBrowser
    {
        var browser = PageBrowser(client)
        let signedIn = try await browser.signInAdmin(tenant: tenant, clientID: admin.id, secret: admin.secret)
        #expect(signedIn.status == 303, "the admin sign-in failed: \(signedIn.body.prefix(300))")
        return browser
    }
}

extension PageBrowser {
    /// Loads the admin sign-in form of `tenant` and posts the credentials with its CSRF token.
    mutating func signInAdmin(tenant: String, clientID: String, secret: String) async throws -> PageResponse {
        let form = try await get("/admin/t/\(tenant)/sign-in")
        let token = try #require(form.field("csrf_token"), "no CSRF token on the sign-in form")
        return try await post(
            "/admin/t/\(tenant)/sign-in",
            form: [("csrf_token", token), ("client_id", clientID), ("client_secret", secret)])
    }

    /// The session's CSRF token, read from the instance list.
    mutating func adminCSRFToken(tenant: String) async throws -> String {
        let page = try await get("/admin/t/\(tenant)")
        #expect(page.status == 200)
        return try #require(page.field("csrf_token"), "no CSRF token on the admin page")
    }
}
