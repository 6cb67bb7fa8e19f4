import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import AuditConsumer

/// On the audit consumer's bundle: each service target ships its own document (the other services'
/// health tests check theirs against their routes).
@Suite struct OpenAPIDocumentTests {
    static let resources = ServiceDescriptor.auditConsumer.resources

    @Test func theServiceShipsItsDocument() throws {
        let document = try OpenAPIDocument(service: "audit-consumer", bundle: Self.resources)
        let operations = document.operations()
        for common in ["GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json"] {
            #expect(operations.contains(common), "audit-consumer lacks \(common)")
        }
    }

    @Test func anUnknownServiceHasNoDocument() {
        #expect(throws: OpenAPIDocument.Missing.self) {
            try OpenAPIDocument(service: "no-such-service", bundle: Self.resources)
        }
    }

    @Test func theBundleHoldsNoOtherServicesDocument() {
        for other in ["registration-gateway", "token-service", "dpop-verifier"] {
            #expect(throws: OpenAPIDocument.Missing.self) {
                try OpenAPIDocument(service: other, bundle: Self.resources)
            }
        }
    }

    @Test func comparisonNamesRoutesMissingFromEitherSide() throws {
        let document = try OpenAPIDocument(service: "audit-consumer", bundle: Self.resources)
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
        let document = try OpenAPIDocument(service: "audit-consumer", bundle: Self.resources)
        let router = Router()
        document.register(on: router)
        try await Application(router: router).journaledTest(.router) { client in
            try await client.execute(uri: "/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.body == document.json)
            }
        }
    }
}
