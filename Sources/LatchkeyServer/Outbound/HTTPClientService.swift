import AsyncHTTPClient
import ServiceLifecycle

/// A long-lived AsyncHTTPClient `HTTPClient` as a service: it owns the client and shuts it down once
/// graceful shutdown has begun. Services stop in reverse order, so listing it before the services that
/// use the client keeps the client open until they (and the HTTP server) have stopped.
public struct HTTPClientService: Service {
    public let client: HTTPClient

    public init(configuration: HTTPClient.Configuration) {
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }

    /// Releases the client of an application that failed to build and so never runs: AsyncHTTPClient traps
    /// when a client is released without its shutdown.
    public func shutdownWithoutRunning() {
        try? client.syncShutdown()
    }
}
