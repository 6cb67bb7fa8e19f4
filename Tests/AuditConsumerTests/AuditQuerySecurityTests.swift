import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import AuditConsumer

/// Who may read which tenant's audit log, and what happens to malformed or hostile requests.
@Suite struct AuditQuerySecurityTests {
    static func endpoints(_ tenant: String) -> [String] {
        [
            "/audit/t/\(tenant)/events", "/audit/t/\(tenant)/clients/shared-client/timeline",
            "/audit/t/\(tenant)/users/\(AuditEventFactory.user(1).uuidString)/timeline",
            "/audit/t/\(tenant)/verify", "/audit/t/\(tenant)/export",
        ]
    }

    @Test func everyEndpointKeepsTenantsApart() async throws {
        let tenantA = TestEnvironment.uniqueTenant("iso-a")
        let tenantB = TestEnvironment.uniqueTenant("iso-b")
        let user = AuditEventFactory.user(1)
        // Same client id, same user id in both tenants: only the tenant tells them apart.
        let eventsA = try [
            AuditEventFactory(tenant: tenantA).registered(client: "shared-client", user: user),
            AuditEventFactory(tenant: tenantA).issued(client: "shared-client", user: user),
        ]
        let eventsB = try [
            AuditEventFactory(tenant: tenantB).registered(client: "shared-client", user: user),
            AuditEventFactory(tenant: tenantB).revoked(client: "shared-client", user: user),
            AuditEventFactory(tenant: tenantB).issued(client: "shared-client", user: user),
        ]
        try await AuditQueryHarness.run(tenants: [tenantA, tenantB]) { api in
            try await AuditTest.store(eventsA + eventsB)
            let adminA = try await TestDatabase.withApp {
                try await AdminTokenMinter.make(tenant: tenantA, issuerBase: AuditTest.issuerBase, in: $0)
            }
            let tokenA = try adminA.authorization()

            // Tenant A's admin: its own tenant on every endpoint, never tenant B.
            for uri in Self.endpoints(tenantA) {
                #expect(try await api.get(uri, authorization: tokenA).status == .ok, "\(uri)")
            }
            for uri in Self.endpoints(tenantB) {
                try await api.expectError(uri, .unauthorized, "invalid_token", authorization: tokenA)
            }
            // A's key signing a token that claims B's issuer does not verify either.
            var forged = adminA.claims()
            forged["iss"] = .string("\(AuditTest.issuerBase)/t/\(tenantB)")
            try await api.expectError(
                "/audit/t/\(tenantB)/events", .unauthorized, "invalid_token",
                authorization: "Bearer \(try adminA.token(forged))")

            // What each tenant sees is its own, even for the same client and user ids.
            let listA = try await api.json("/audit/t/\(tenantA)/events", authorization: tokenA)
            #expect(listA["events"]?.arrayValue?.count == eventsA.count)
            #expect(listA["events"]?.arrayValue?.allSatisfy { $0["event"]?["tenantid"] == .string(tenantA) } == true)
            let timelineA = try await api.json(
                "/audit/t/\(tenantA)/clients/shared-client/timeline", authorization: tokenA)
            #expect(timelineA["status"] == "active")
            #expect(timelineA["revocations"] == [])
            let timelineB = try await api.json("/audit/t/\(tenantB)/clients/shared-client/timeline")
            #expect(timelineB["status"] == "revoked")
            let userA = try await api.json(
                "/audit/t/\(tenantA)/users/\(user.uuidString)/timeline", authorization: tokenA)
            #expect(userA["instances"]?.arrayValue?.count == 1)
            #expect(userA["instances"]?.arrayValue?.first?["tokens"]?["issued_total"] == 1)
            let verifyA = try await api.json("/audit/t/\(tenantA)/verify", authorization: tokenA)
            #expect(verifyA["count"] == .number(Double(eventsA.count)))
            let export = try await api.get("/audit/t/\(tenantA)/export", authorization: tokenA)
            #expect(String(buffer: export.body).split(separator: "\n").count == eventsA.count)
            #expect(!String(buffer: export.body).contains(tenantB))

            // A cursor from tenant B's listing cannot pull B's rows through tenant A.
            let pageB = try await api.json("/audit/t/\(tenantB)/events?limit=1")
            let cursorB = try #require(pageB["next_cursor"]?.stringValue)
            let crossed = try await api.json(
                "/audit/t/\(tenantA)/events?limit=5&cursor=\(cursorB)", authorization: tokenA)
            #expect(crossed["events"]?.arrayValue?.allSatisfy { $0["event"]?["tenantid"] == .string(tenantA) } == true)

            // The platform admin reaches both; unknown tenants are 404 for it, 401 for everybody else.
            #expect(try await api.get("/audit/t/\(tenantB)/verify").status == .ok)
            try await api.expectError("/audit/t/no-such-tenant-x/events", .notFound, "not_found")
            try await api.expectError(
                "/audit/t/no-such-tenant-x/events", .unauthorized, "invalid_token", authorization: tokenA)
            try await api.expectError("/audit/t/NOT_A_SLUG/events", .notFound, "not_found")
        }
    }

    @Test func requestsWithoutAValidAdminTokenAreRefused() async throws {
        let tenant = TestEnvironment.uniqueTenant("auth")
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            let uri = "/audit/t/\(tenant)/events"
            let missing = try await api.client.execute(uri: uri, method: .get)
            #expect(missing.status == .unauthorized)
            #expect(missing.headers[.wwwAuthenticate] == #"Bearer realm="latchkey""#)
            let admin = api.platformAdmin
            var expired = admin.claims(now: Date().addingTimeInterval(-3600))
            expired["exp"] = .number(Date().addingTimeInterval(-600).timeIntervalSince1970)
            var noExpiry = admin.claims()
            noExpiry["exp"] = nil
            let otherKey = try AdminTokenMinter(
                tenant: admin.tenant, issuerBase: admin.issuerBase, kid: admin.kid, key: SigningKey.generate())
            let cases: [(String, HTTPResponse.Status, String)] = [
                ("Basic YWRtaW46YWRtaW4=", .unauthorized, "invalid_request"),
                ("Bearer", .unauthorized, "invalid_request"),
                ("Bearer not-a-jwt", .unauthorized, "invalid_token"),
                ("Bearer " + String(repeating: "a", count: 9_000), .unauthorized, "invalid_token"),
                ("Bearer \(try admin.token(expired))", .unauthorized, "invalid_token"),
                ("Bearer \(try admin.token(noExpiry))", .unauthorized, "invalid_token"),
                ("Bearer \(try admin.token(admin.claims(), typ: "JWT"))", .unauthorized, "invalid_token"),
                ("Bearer \(try admin.token(admin.claims(), kid: "unknown-kid"))", .unauthorized, "invalid_token"),
                ("Bearer \(try otherKey.token())", .unauthorized, "invalid_token"),
                ("Bearer \(try admin.token(scope: "openid profile"))", .forbidden, "insufficient_scope"),
            ]
            for (authorization, status, code) in cases {
                try await api.expectError(uri, status, code, authorization: authorization)
            }
            let scopeless = try await api.get(uri, authorization: try admin.authorization(scope: "audit"))
            #expect(scopeless.headers[.wwwAuthenticate]?.contains(#"error="insufficient_scope""#) == true)
            var twice = HTTPFields()
            twice.append(.init(name: .authorization, value: try admin.authorization()))
            twice.append(.init(name: .authorization, value: try admin.authorization()))
            let doubled = try await api.client.execute(uri: uri, method: .get, headers: twice)
            #expect(doubled.status == .badRequest)
        }
    }

    @Test func malformedAndHostileQueriesGetRFCStyleErrors() async throws {
        let tenant = TestEnvironment.uniqueTenant("bad")
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            try await AuditTest.store(try (0..<5).map { try AuditEventFactory(tenant: tenant).mixed($0) })
            let events = "/audit/t/\(tenant)/events"
            let valid = try await api.json("\(events)?limit=2")
            let cursor = try #require(valid["next_cursor"]?.stringValue)
            let long = String(repeating: "x", count: 300)
            let badQueries = [
                "limit=0", "limit=501", "limit=abc", "limit=-1", "limit=99999999999999999999",
                "type=io.example.nope.v1", "order=sideways", "from=yesterday", "to=2025-13-01T00:00:00Z",
                "from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z", "cursor=%%%", "cursor=bm90LWEtY3Vyc29y",
                "cursor=\(cursor)&type=token-issued", "cursor=\(cursor)&order=asc",
                "cursor=" + String(repeating: "A", count: 600),
                "clientid=x", "limit=1&limit=2", "client_id=\(long)", "client_id=", "user=%00", "client_id=a%0Ab",
            ]
            for query in badQueries {
                try await api.expectError("\(events)?\(query)", .badRequest, "invalid_request")
            }
            for uri in [
                "/audit/t/\(tenant)/verify?deep=1", "/audit/t/\(tenant)/export?limit=5",
                "/audit/t/\(tenant)/export?from=not-a-date", "/audit/t/\(tenant)/clients/\(long)/timeline",
                "/audit/t/\(tenant)/clients/a%01b/timeline", "/audit/t/\(tenant)/users/x/timeline?full=1",
            ] {
                try await api.expectError(uri, .badRequest, "invalid_request")
            }
            // Unusual but well-formed Unicode is just a filter value; other methods are not routes.
            let unicode = try await api.get("\(events)?client_id=%E2%80%AE%F0%9F%98%80")
            #expect(unicode.status == .ok)
            let post = try await api.client.execute(
                uri: events, method: .post, headers: [.authorization: try api.platformAdmin.authorization()],
                body: ByteBuffer(string: "{}"))
            #expect(post.status == .methodNotAllowed || post.status == .notFound)
        }
    }
}
