import Hummingbird
import HummingbirdTesting
import LatchkeyTestSupport
import NIOCore
import Prometheus
import Testing

@testable import LatchkeyServer

@Suite struct RequestMetricsMiddlewareTests {
    func makeApp(_ registry: PrometheusCollectorRegistry) -> some ApplicationProtocol {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: RequestMetricsMiddleware(factory: PrometheusMetricsFactory(registry: registry)))
        router.get("/buffer/:id") { _, _ -> String in "one buffer" }
        router.get("/stream") { _, _ -> Response in
            let parts = ["streamed ", "in ", "parts"].map { ByteBuffer(string: $0) }
            return Response(
                status: .ok,
                body: ResponseBody(
                    asyncSequence: AsyncStream { continuation in
                        parts.forEach { continuation.yield($0) }
                        continuation.finish()
                    }))
        }
        router.get("/conflict") { _, _ -> String in throw HTTPError(.conflict) }
        return Application(router: router)
    }

    func exposition(_ registry: PrometheusCollectorRegistry) -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test func requestsAreCountedAndTimedByRoutePatternMethodAndStatus() async throws {
        let registry = PrometheusCollectorRegistry()
        try await makeApp(registry).journaledTest(.router) { client in
            for id in ["a", "b"] {
                try await client.execute(uri: "/buffer/\(id)", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == "one buffer")
                }
            }
        }
        let text = exposition(registry)
        let series = #"{route="/buffer/{id}",method="GET",status="200"}"#
        #expect(PrometheusText.value(text, "latchkey_http_requests_total" + series) == 2)
        #expect(PrometheusText.value(text, "latchkey_http_request_duration_seconds_count" + series) == 2)
        #expect(PrometheusText.value(text, #"latchkey_http_active_requests{method="GET"}"#) == 0)
    }

    @Test func aStreamedBodyIsWrittenWholeAndCounted() async throws {
        let registry = PrometheusCollectorRegistry()
        try await makeApp(registry).journaledTest(.live) { client in
            try await client.execute(uri: "/stream", method: .get) { response in
                #expect(String(buffer: response.body) == "streamed in parts")
            }
        }
        let text = exposition(registry)
        #expect(
            PrometheusText.value(text, #"latchkey_http_requests_total{route="/stream",method="GET",status="200"}"#)
                == 1)
        #expect(PrometheusText.value(text, #"latchkey_http_active_requests{method="GET"}"#) == 0)
    }

    @Test func thrownErrorsAreCountedWithTheirStatus() async throws {
        let registry = PrometheusCollectorRegistry()
        try await makeApp(registry).journaledTest(.router) { client in
            try await client.execute(uri: "/conflict", method: .get) { response in
                #expect(response.status == .conflict)
            }
        }
        let text = exposition(registry)
        let series = #"{route="/conflict",method="GET",status="409"}"#
        #expect(PrometheusText.value(text, "latchkey_http_request_errors_total" + series) == 1)
        #expect(PrometheusText.value(text, "latchkey_http_requests_total" + series) == 1)
        #expect(PrometheusText.conventionViolations(text) == [])
    }
}
