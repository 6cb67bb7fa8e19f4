import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import NIOCore
import NIOFoundationCompat

/// What the test upstream saw of a forwarded request (its echo answer, as JSON).
struct EchoedRequest: Codable, Sendable {
    let method: String
    /// The request target exactly as received (percent-encoding intact).
    let target: String
    /// Every header field, in order, with its name lower-cased.
    let headers: [[String]]
    let bodyBytes: Int
    let bodySHA256: String

    func values(_ name: String) -> [String] {
        headers.filter { $0[0] == name.lowercased() }.map { $0[1] }
    }

    func value(_ name: String) -> String? { values(name).first }
}

/// The API behind the sidecar in tests: echoes every request (streaming the body through SHA-256),
/// serves large streamed downloads, answers slowly on demand (``TimedUpstream`` does the timing-sensitive cases), and hosts a ``TestIssuer``.
enum TestUpstream {
    /// `slowRequestStarted` is called when a `/slow/MS` request reaches the upstream, before its pause.
    static func router(issuer: TestIssuer? = nil, slowRequestStarted: @escaping @Sendable () -> Void = {})
        -> Router<BasicRequestContext>
    {
        let router = Router()
        issuer?.addRoutes(to: router)
        router.get("/download/:bytes") { _, context -> Response in
            let total = try context.parameters.require("bytes", as: Int.self)
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(asyncSequence: DownloadChunks(total: total)))
        }
        router.get("/slow/:ms") { _, context -> String in
            slowRequestStarted()
            try await Task.sleep(for: .milliseconds(try context.parameters.require("ms", as: Int.self)))
            return "slow"
        }
        router.add(middleware: EchoMiddleware())
        return router
    }

    /// Deterministic download content: a 251-byte cycle (0, 1, …, 250, 0, …), 64 KiB per chunk.
    static let downloadCycle: [UInt8] = (0..<(64 * 1024 + 251)).map { UInt8($0 % 251) }

    /// SHA-256 of the first `size` download bytes.
    static func downloadDigest(_ size: Int) -> Data {
        var hasher = SHA256()
        var sent = 0
        while sent < size {
            let count = Swift.min(64 * 1024, size - sent)
            let offset = sent % 251
            hasher.update(data: downloadCycle[offset..<(offset + count)])
            sent += count
        }
        return Data(hasher.finalize())
    }
}

/// Answers every request no route matched with an ``EchoedRequest``.
struct EchoMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var hasher = SHA256()
        var count = 0
        for try await chunk in request.body {
            count += chunk.readableBytes
            chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
        }
        var headers = request.headers.map { [$0.name.canonicalName, $0.value] }
        if let authority = request.head.authority { headers.insert(["host", authority], at: 0) }
        let echo = EchoedRequest(
            method: request.method.rawValue, target: request.head.path ?? "", headers: headers,
            bodyBytes: count, bodySHA256: Base64URL.encode(hasher.finalize()))
        let data = try JSONEncoder().encode(echo)
        return Response(
            status: .ok, headers: [.contentType: "application/json", HTTPField.Name("X-Upstream")!: "echo"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// `total` bytes in 64 KiB chunks.
struct DownloadChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let total: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let total: Int
        var sent = 0

        mutating func next() async -> ByteBuffer? {
            guard sent < total else { return nil }
            let count = Swift.min(64 * 1024, total - sent)
            let offset = sent % 251
            sent += count
            return ByteBuffer(bytes: TestUpstream.downloadCycle[offset..<(offset + count)])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(total: total) }
}
