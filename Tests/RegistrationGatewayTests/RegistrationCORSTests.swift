import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyTestSupport
import NIOCore
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationCORSTests {
    static let app = "https://app.example.com"
    static let policy = #"{"registration_cors_origins":["https://app.example.com"]}"#
    static let allowOrigin = HTTPField.Name("Access-Control-Allow-Origin")!
    static let allowMethods = HTTPField.Name("Access-Control-Allow-Methods")!
    static let allowHeaders = HTTPField.Name("Access-Control-Allow-Headers")!
    static let maxAge = HTTPField.Name("Access-Control-Max-Age")!
    static let allowCredentials = HTTPField.Name("Access-Control-Allow-Credentials")!

    static func request(
        _ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, origin: String?,
        extra: HTTPFields = [:], body: String? = nil
    ) async throws -> TestResponse {
        var headers = extra
        if let origin { headers[HTTPField.Name("Origin")!] = origin }
        if body != nil { headers[.contentType] = "application/json" }
        return try await client.execute(
            uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }
        ) { $0 }
    }

    static func preflight(_ method: String) -> HTTPFields {
        [
            HTTPField.Name("Access-Control-Request-Method")!: method,
            HTTPField.Name("Access-Control-Request-Headers")!: "authorization,content-type",
        ]
    }

    @Test func preflightFromAnAllowedOriginIsAnsweredForBothRoutes() async throws {
        let h = try await GatewayHarness.make(policy: Self.policy)
        try await GatewayHarness.withApp { client in
            let register = try await Self.request(
                client, .options, "/t/\(h.tenant)/register", origin: Self.app, extra: Self.preflight("POST"))
            #expect(register.status == .noContent)
            #expect(register.headers[Self.allowOrigin] == Self.app)
            #expect(register.headers[Self.allowMethods] == "POST, OPTIONS")
            #expect(register.headers[Self.allowHeaders] == "Authorization, Content-Type, DPoP, Idempotency-Key")
            #expect(register.headers[Self.maxAge] == "600")
            #expect(register.headers[.vary] == "Origin")
            #expect(register.headers[Self.allowCredentials] == nil)
            let configure = try await Self.request(
                client, .options, "/t/\(h.tenant)/register/some-client", origin: Self.app,
                extra: Self.preflight("DELETE"))
            #expect(configure.status == .noContent)
            #expect(configure.headers[Self.allowOrigin] == Self.app)
            #expect(configure.headers[Self.allowMethods] == "GET, PUT, DELETE, OPTIONS")
        }
    }

    @Test func preflightFromADisallowedOriginOrForAnotherMethodIs403WithoutCORSHeaders() async throws {
        let h = try await GatewayHarness.make(policy: Self.policy)
        let closed = try await GatewayHarness.make()
        try await GatewayHarness.withApp { client in
            let refusals = [
                try await Self.request(
                    client, .options, "/t/\(h.tenant)/register", origin: "https://evil.example.com",
                    extra: Self.preflight("POST")),
                try await Self.request(
                    client, .options, "/t/\(h.tenant)/register", origin: "https://app.example.com.evil.io",
                    extra: Self.preflight("POST")),
                try await Self.request(
                    client, .options, "/t/\(h.tenant)/register", origin: "null", extra: Self.preflight("POST")),
                try await Self.request(
                    client, .options, "/t/\(h.tenant)/register", origin: Self.app, extra: Self.preflight("PATCH")),
                try await Self.request(client, .options, "/t/\(h.tenant)/register", origin: Self.app),
                try await Self.request(
                    client, .options, "/t/\(closed.tenant)/register", origin: Self.app, extra: Self.preflight("POST")),
            ]
            for response in refusals {
                #expect(response.status == .forbidden)
                #expect(response.errorCode == "access_denied")
                #expect(response.headers[Self.allowOrigin] == nil)
                #expect(response.headers[Self.allowMethods] == nil)
            }
            // Not a CORS request at all: a plain OPTIONS answer.
            let plain = try await Self.request(client, .options, "/t/\(h.tenant)/register", origin: nil)
            #expect(plain.status == .noContent)
            #expect(plain.headers[HTTPField.Name("Allow")!] == "POST, OPTIONS")
            #expect(plain.headers[Self.allowOrigin] == nil)
        }
    }

    @Test func actualResponsesCarryTheOriginOnlyWhenAllowedErrorsIncluded() async throws {
        let h = try await GatewayHarness.make(policy: Self.policy)
        let token = try await h.dcrToken()
        let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
        try await GatewayHarness.withApp { client in
            let path = "/t/\(h.tenant)/register"
            let created = try await Self.request(
                client, .post, path, origin: Self.app, extra: bearer, body: RegistrationEndpointTests.native)
            #expect(created.status == .created)
            #expect(created.headers[Self.allowOrigin] == Self.app)
            #expect(created.headers[.vary] == "Origin")
            #expect(created.headers[Self.allowCredentials] == nil)
            let malformed = try await Self.request(
                client, .post, path, origin: Self.app, extra: bearer, body: "{not json")
            #expect(malformed.status == .badRequest)
            #expect(malformed.headers[Self.allowOrigin] == Self.app)
            let clientID = try #require(created.json["client_id"] as? String)
            let unauthorized = try await Self.request(
                client, .get, "\(path)/\(clientID)", origin: Self.app, extra: [.authorization: "Bearer wrong"])
            #expect(unauthorized.status == .unauthorized)
            #expect(unauthorized.headers[Self.allowOrigin] == Self.app)
            let foreign = try await Self.request(
                client, .post, path, origin: "https://evil.example.com", extra: bearer,
                body: RegistrationEndpointTests.native)
            #expect(foreign.status == .created)
            #expect(foreign.headers[Self.allowOrigin] == nil)
            let noOrigin = try await Self.request(
                client, .post, path, origin: nil, extra: bearer, body: RegistrationEndpointTests.native)
            #expect(noOrigin.status == .created)
            #expect(noOrigin.headers[Self.allowOrigin] == nil)
        }
    }
}
