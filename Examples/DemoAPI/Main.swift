import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// `demo-api`: the example API the local platform puts behind `dpop-verifier`. It trusts the sidecar's
/// `X-Latchkey-*` identity headers (it listens on loopback only, so nothing else can reach it) and
/// echoes who called it.
@main
struct DemoAPI {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        let port = environment["DEMO_API_PORT"].flatMap(Int.init) ?? 8090
        var logger = Logger(label: "demo-api")
        logger.logLevel = .info
        let router = Router()
        router.get("health") { _, _ in "ok" }
        router.get("v1/orders") { request, _ in try reply(request, body: nil) }
        router.post("v1/orders") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            return try reply(request, body: String(buffer: body))
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService()
    }

    /// The caller as the sidecar established it, plus the order the caller posted.
    static func reply(_ request: Request, body: String?) throws -> Response {
        var object: [String: String] = ["method": request.method.rawValue, "path": request.uri.path]
        for name in ["tenant", "client-id", "subject", "scope", "jkt"] {
            if let field = HTTPField.Name("X-Latchkey-\(name)"), let value = request.headers[field] {
                object[name] = value
            }
        }
        if let body { object["order"] = body }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
