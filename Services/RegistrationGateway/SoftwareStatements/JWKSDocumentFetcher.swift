import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceLifecycle
import Shared

/// Fetches a JWK Set document by URL: GET without redirects, bounded in time and size.
struct JWKSDocumentFetcher: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let client: HTTPClient
    var timeout: TimeAmount = .seconds(5)
    /// Largest accepted document.
    var maximumBytes = 64 * 1024

    /// An HTTP client that never follows redirects (the policy names the exact document).
    static func makeClient() -> HTTPClient {
        HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5))))
    }

    func fetch(_ url: String) async throws -> JWKSet {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let response = try await client.execute(request, timeout: timeout)
        guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status.code)") }
        let body: ByteBuffer
        do { body = try await response.body.collect(upTo: maximumBytes) } catch {
            throw Failure(description: "\(url) sent more than \(maximumBytes) bytes")
        }
        do { return try JSONDecoder().decode(JWKSet.self, from: Data(buffer: body)) } catch {
            throw Failure(description: "\(url) is not a JWK Set document")
        }
    }
}

/// Keeps the fetcher's HTTP client for the application's lifetime and shuts it down afterwards.
struct HTTPClientShutdownService: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
