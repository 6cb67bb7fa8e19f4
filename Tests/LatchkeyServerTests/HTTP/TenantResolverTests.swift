import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

@Suite struct TenantResolverTests {
    @Test func resolvesKnownTenantsAndRefusesEverythingElseWith404JSON() async throws {
        try await TestDatabase.withApp { database in
            let tenant = TestEnvironment.uniqueTenant("res")
            try await TestDatabase.createTenant(
                tenant, in: database, policy: #"{"version": 3, "max_clients_per_user": 7}"#)
            let router = Router(context: LatchkeyRequestContext.self)
            router.add(middleware: ErrorMiddleware())
            router.group("/t/{tenant}")
                .add(middleware: TenantResolverMiddleware(directory: TenantDirectory(database: database)))
                .get("/whoami") { _, context -> String in
                    let resolved = try context.requireTenant()
                    return "\(resolved.id) \(resolved.policy.maxClientsPerUser)"
                }
            try await Application(router: router).journaledTest(.router) { client in
                try await client.execute(uri: "/t/\(tenant)/whoami", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == "\(tenant) 7")
                }
                for bad in ["unknown-tenant-x", "UPPER", "-lead", String(repeating: "a", count: 64), "a%2Fb", "%00"] {
                    try await client.execute(uri: "/t/\(bad)/whoami", method: .get) { response in
                        #expect(response.status == .notFound, "\(bad)")
                        let body = try JSONDecoder().decode(
                            [String: String].self, from: Data(response.body.readableBytesView))
                        #expect(body["error"] == "not_found")
                    }
                }
            }
        }
    }
}
