import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore

/// The native app's side of RFC 8252 §7.3: a loopback HTTP listener at `/callback` that records every
/// query the browser brings back from `/authorize`.
final class LoopbackCallback: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [[String: String]] = []
    private(set) var redirectURI = ""

    /// Runs the listener on a free loopback port for the duration of `body`.
    static func serve<T: Sendable>(_ body: @Sendable (LoopbackCallback) async throws -> T) async throws -> T {
        let callback = LoopbackCallback()
        let router = Router()
        router.get("callback") { request, _ -> Response in
            let items = URLComponents(string: "http://x/?" + (request.uri.query ?? ""))?.queryItems ?? []
            callback.record(
                Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first }))
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: "<!doctype html><html lang=\"en\"><title>Signed in</title><p>Signed in.</p></html>")))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in
            guard let port = client.port else { throw WebDriverError("the callback listener has no port") }
            callback.redirectURI = "http://127.0.0.1:\(port)/callback"
            return try await body(callback)
        }
    }

    private func record(_ query: [String: String]) {
        lock.withLock { received.append(query) }
    }

    var count: Int { lock.withLock { received.count } }

    /// Waits for callback number `index` (0-based) and answers its query parameters.
    func query(_ index: Int, timeout: Duration = .seconds(45)) async throws -> [String: String] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let query = lock.withLock({ received.count > index ? received[index] : nil }) { return query }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw WebDriverError("the browser never reached \(redirectURI) (callback #\(index + 1))")
    }
}
