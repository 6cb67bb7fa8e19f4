import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyServer
import Testing

@Suite struct OpenAPIDocumentTests {
    static let services = ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer"]

    @Test(arguments: services) func everyServiceShipsItsDocument(service: String) throws {
        let document = try OpenAPIDocument(service: service)
        let operations = document.operations()
        for common in ["GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json"] {
            #expect(operations.contains(common), "\(service) lacks \(common)")
        }
    }

    @Test func anUnknownServiceHasNoDocument() {
        #expect(throws: OpenAPIDocument.Missing.self) { try OpenAPIDocument(service: "no-such-service") }
    }

    @Test func comparisonNamesRoutesMissingFromEitherSide() throws {
        let document = try OpenAPIDocument(service: "audit-consumer")
        let router = Router()
        router.get("/healthz") { _, _ in "" }
        router.get("/audit/t/:tenant/verify") { _, _ in "" }
        router.delete("/audit/t/:tenant/verify") { _, _ in "" }
        let comparison = document.compare(with: router)
        #expect(comparison.undocumented == ["DELETE /audit/t/{tenant}/verify"])
        #expect(comparison.unregistered.contains("GET /readyz"))
        #expect(!comparison.unregistered.contains("GET /audit/t/{tenant}/verify"))
        #expect(!comparison.unregistered.contains("GET /healthz"))
    }

    @Test func servedDocumentIsTheBundledJSON() async throws {
        let document = try OpenAPIDocument(service: "token-service")
        let router = Router()
        document.register(on: router)
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.body == document.json)
            }
        }
    }
}
