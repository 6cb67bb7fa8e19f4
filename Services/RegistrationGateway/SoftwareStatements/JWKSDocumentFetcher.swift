import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceLifecycle
import Shared
import Synchronization

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

/// The fetcher's HTTP client, created on first use (most gateways never fetch a `jwks_uri`) and shut
/// down with the application. An application that is built but never run creates none, so no client
/// is left to be deinitialised without its shutdown (AsyncHTTPClient traps on that).
final class LazyHTTPClient: Service, Sendable {
    private let state = Mutex<(client: HTTPClient?, closed: Bool)>((nil, false))

    /// The client; fails once the application is shutting down.
    func client() throws -> HTTPClient {
        try state.withLock { state in
            guard !state.closed else { throw JWKSDocumentFetcher.Failure(description: "the gateway is shutting down") }
            if let client = state.client { return client }
            let client = JWKSDocumentFetcher.makeClient()
            state.client = client
            return client
        }
    }

    /// Fetches `url` with the client.
    func fetch(_ url: String) async throws -> JWKSet {
        try await JWKSDocumentFetcher(client: try client()).fetch(url)
    }

    func run() async throws {
        try? await gracefulShutdown()
        let client = state.withLock { state in
            state.closed = true
            return state.client
        }
        try await client?.shutdown()
    }
}
