import AsyncHTTPClient
import Hummingbird
import HummingbirdTesting
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix

@testable import DPoPVerifier

/// The sidecar's request path alone — the same middleware, verification and proxy as the service,
/// without PostgreSQL or Kafka (revocations preloaded) — on a real socket. For the vector suites,
/// which build one sidecar per vector.
func withRequestPath<T: Sendable>(
    _ settings: SidecarSettings, overrides: SidecarOverrides = SidecarOverrides(),
    revocations: RevokedClients = RevokedClients(loaded: true),
    _ body: @Sendable (any TestClientProtocol) async throws -> T
) async throws -> T {
    let httpClient = HTTPClient(
        eventLoopGroup: .singletonMultiThreadedEventLoopGroup, configuration: IssuerKeyFetcher.clientConfiguration)
    do {
        let sidecar = try Sidecar(
            settings: settings, httpClient: httpClient, revocations: revocations, overrides: overrides,
            logger: TestServiceSettings.logger)
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        sidecar.addRoutes(to: router)
        let app = Application(
            router: router, server: try sidecar.server(http: HTTPServerSettings()),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: TestServiceSettings.logger)
        let result = try await app.journaledTest(.live, body)
        try await httpClient.shutdown()
        return result
    } catch {
        try? await httpClient.shutdown()
        throw error
    }
}
