import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import AuditConsumer

/// A running audit service (over an empty embedded cluster) with tenants and admin tokens, for
/// query API tests that put their data in through the batch store.
struct AuditQueryHarness: Sendable {
    let client: any TestClientProtocol
    let platformAdmin: AdminTokenMinter
    let service: AuditService

    static func run(
        tenants: [String], _ body: @Sendable (AuditQueryHarness) async throws -> Void
    ) async throws {
        let platform = TestEnvironment.uniqueTenant("plat")
        try await TestDatabase.withApp { database in
            for tenant in tenants + [platform] { try await TestDatabase.createTenant(tenant, in: database) }
        }
        let admin = try await TestDatabase.withApp {
            try await AdminTokenMinter.make(tenant: platform, issuerBase: AuditTest.issuerBase, in: $0)
        }
        try await AuditTest.withCluster { cluster in
            let service = try await AuditTest.makeService(
                cluster: cluster, audit: AuditTest.settings(platform: platform))
            try await service.makeApplication().journaledTest(.router) { client in
                try await body(AuditQueryHarness(client: client, platformAdmin: admin, service: service))
            }
        }
    }

    /// GET `uri` with a platform admin token (or `authorization` when given).
    func get(_ uri: String, authorization: String? = nil) async throws -> TestResponse {
        let value = try authorization ?? platformAdmin.authorization()
        return try await client.execute(uri: uri, method: .get, headers: [.authorization: value])
    }

    /// GET that must answer 200 with JSON.
    func json(_ uri: String, authorization: String? = nil) async throws -> JSONValue {
        let response = try await get(uri, authorization: authorization)
        #expect(response.status == .ok, "\(uri): \(String(buffer: response.body))")
        #expect(response.headers[.cacheControl] == "no-store")
        return try AuditTest.json(response)
    }

    /// GET that must fail with `status` and the RFC-style JSON error `code`.
    func expectError(
        _ uri: String, _ status: HTTPResponse.Status, _ code: String, authorization: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let response = try await get(uri, authorization: authorization)
        #expect(response.status == status, "\(uri): \(String(buffer: response.body))", sourceLocation: sourceLocation)
        let body = try? AuditTest.json(response)
        #expect(body?["error"]?.stringValue == code, "\(uri)", sourceLocation: sourceLocation)
        #expect(body?["error_description"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
    }

    /// Every page of a listing, following `next_cursor` from `uri`.
    func allPages(_ uri: String, maximumPages: Int = 1_000) async throws -> [[JSONValue]] {
        var pages: [[JSONValue]] = []
        var next: String? = uri
        while let current = next, pages.count < maximumPages {
            let page = try await json(current)
            pages.append(page["events"]?.arrayValue ?? [])
            next = page["next_cursor"]?.stringValue.map { Self.replacingCursor(in: uri, with: $0) }
        }
        return pages
    }

    static func replacingCursor(in uri: String, with cursor: String) -> String {
        let base = uri.split(separator: "?", maxSplits: 1)
        let query =
            base.count > 1 ? base[1].split(separator: "&").filter { !$0.hasPrefix("cursor=") }.map(String.init) : []
        return String(base[0]) + "?" + (query + ["cursor=\(cursor)"]).joined(separator: "&")
    }

    static func sequences(_ events: [JSONValue]) -> [Int64] {
        events.compactMap { $0["sequence"]?.doubleValue.map { Int64($0) } }
    }
}
