import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

@Suite struct HTTPMiddlewareTests {
    /// A router with the standard middleware stack and a few routes that fail in known ways.
    func makeApp() -> some ApplicationProtocol {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: AccessLogMiddleware())
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: BodyLimitMiddleware())
        router.post("/echo") { request, context -> Response in
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            return Response(status: .ok, body: .init(byteBuffer: body))
        }
        router.get("/oauth") { _, _ -> String in throw OAuthError.invalidRequest("bad parameter") }
        router.get("/crash") { _, _ -> String in throw CocoaError(.fileNoSuchFile) }
        router.get("/decode") { request, context -> String in
            struct Input: Decodable { let name: String }
            return try await request.decode(as: Input.self, context: context).name
        }
        HealthRoutes<LatchkeyRequestContext>(checks: [
            ReadinessCheck("always") { true }
        ]).register(on: router)
        return Application(router: router)
    }

    func errorBody(_ response: TestResponse) throws -> [String: String] {
        try JSONDecoder().decode([String: String].self, from: Data(response.body.readableBytesView))
    }

    @Test func oauthErrorsUseTheJSONShape() async throws {
        try await makeApp().journaledTest(.router) { client in
            try await client.execute(uri: "/oauth", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[.cacheControl] == "no-store")
                let errorJSON = try errorBody(response)
                #expect(errorJSON == ["error": "invalid_request", "error_description": "bad parameter"])
            }
        }
    }

    @Test func unknownErrorsAreOpaque500s() async throws {
        try await makeApp().journaledTest(.router) { client in
            try await client.execute(uri: "/crash", method: .get) { response in
                #expect(response.status == .internalServerError)
                let errorJSON = try errorBody(response)
                #expect(errorJSON["error"] == "server_error")
                #expect(errorJSON["error_description"] == "internal error")
            }
        }
    }

    @Test func unknownRoutesAre404JSON() async throws {
        try await makeApp().journaledTest(.router) { client in
            try await client.execute(uri: "/nope", method: .get) { response in
                #expect(response.status == .notFound)
                let errorJSON = try errorBody(response)
                #expect(errorJSON["error"] == "not_found")
            }
        }
    }

    @Test func bodiesOver64KiBAre413() async throws {
        try await makeApp().journaledTest(.router) { client in
            let big = ByteBuffer(repeating: UInt8(ascii: "a"), count: HTTPLimits.maximumBodySize + 1)
            try await client.execute(uri: "/echo", method: .post, body: big) { response in
                #expect(response.status == .contentTooLarge)
                let errorJSON = try errorBody(response)
                #expect(errorJSON["error"] == "request_too_large")
            }
            let ok = ByteBuffer(repeating: UInt8(ascii: "a"), count: HTTPLimits.maximumBodySize)
            try await client.execute(uri: "/echo", method: .post, body: ok) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == HTTPLimits.maximumBodySize)
            }
        }
    }

    @Test func malformedJSONIsA400NotA500() async throws {
        try await makeApp().journaledTest(.router) { client in
            for body in ["{", "[]", "{\"name\": 5}", "\u{0}\u{1}"] {
                try await client.execute(
                    uri: "/decode", method: .get, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: body)
                ) { response in
                    #expect(response.status == .badRequest)
                    let errorJSON = try errorBody(response)
                    #expect(errorJSON["error"] == "invalid_request")
                }
            }
        }
    }

    @Test func requestIDsArePropagatedOnlyWhenSane() async throws {
        try await makeApp().journaledTest(.router) { client in
            let name = RequestIDMiddleware<LatchkeyRequestContext>.headerName
            try await client.execute(uri: "/healthz", method: .get, headers: [name: "abc-123"]) { response in
                #expect(response.headers[name] == "abc-123")
            }
            try await client.execute(uri: "/healthz", method: .get, headers: [name: "evil\r\nvalue"]) { response in
                #expect(response.headers[name] != nil)
                #expect(response.headers[name] != "evil\r\nvalue")
            }
        }
    }

    @Test func healthReadinessAndMetrics() async throws {
        try await makeApp().journaledTest(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"status":"ok"}"#)
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"always":"ok","status":"ready"}"#)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
            }
        }
    }

    @Test func failingReadinessIs503() async throws {
        let router = Router(context: LatchkeyRequestContext.self)
        HealthRoutes<LatchkeyRequestContext>(checks: [
            ReadinessCheck("postgres") { true }, ReadinessCheck("kafka") { false },
        ]).register(on: router)
        try await Application(router: router).journaledTest(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(String(buffer: response.body) == #"{"kafka":"failing","postgres":"ok","status":"not_ready"}"#)
            }
        }
    }

    @Test func aFailingCheckThatIsNotRequiredOnlyDegrades() async throws {
        let router = Router(context: LatchkeyRequestContext.self)
        HealthRoutes<LatchkeyRequestContext>(checks: [
            ReadinessCheck("postgres") { true }, ReadinessCheck("kafka", isRequired: false) { false },
        ]).register(on: router)
        try await Application(router: router).journaledTest(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"kafka":"degraded","postgres":"ok","status":"degraded"}"#)
            }
        }
        let failing = Router(context: LatchkeyRequestContext.self)
        HealthRoutes<LatchkeyRequestContext>(checks: [
            ReadinessCheck("postgres") { false }, ReadinessCheck("kafka", isRequired: false) { false },
        ]).register(on: failing)
        try await Application(router: failing).journaledTest(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(
                    String(buffer: response.body) == #"{"kafka":"degraded","postgres":"failing","status":"not_ready"}"#)
            }
        }
    }
}
