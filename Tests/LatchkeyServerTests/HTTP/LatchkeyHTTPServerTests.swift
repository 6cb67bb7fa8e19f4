import Configuration
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import LatchkeyServer

/// The connection guard of ``LatchkeyHTTPServer`` in-process, over raw sockets: what keeps a connection
/// usable and what ends it.
@Suite struct LatchkeyHTTPServerTests {
    /// `POST /refuse` answers 401 without reading its body; `GET /ok` answers 200.
    func withServer(_ settings: HTTPServerSettings = .init(), _ body: @Sendable (Int) async throws -> Void) async throws
    {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        router.post("/refuse") { _, _ -> Response in Response(status: .unauthorized) }
        router.get("/ok") { _, _ -> String in "ok" }
        // Where the handler runs: on an event loop, and on the same one after another loop resumed it.
        router.get("/where") { _, _ -> String in
            guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return "concurrency pool" }
            try await Self.otherLoop.next().submit {}.get()
            guard let after = MultiThreadedEventLoopGroup.currentEventLoop else { return "pool after an await" }
            return after === loop ? "its event loop" : "another event loop after an await"
        }
        router.post("/echo") { request, _ -> Response in
            Response(status: .ok, body: .init(byteBuffer: try await request.body.collect(upTo: 1 << 20)))
        }
        let app = Application(
            router: router, server: .latchkey(settings), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.journaledTest(.live) { client in try await body(try #require(client.port)) }
    }

    @Test func aSmallUnreadBodyKeepsTheConnectionAndALargeOneClosesIt() async throws {
        try await withServer { port in
            // Refused with its body at hand: the body is read and dropped, the connection serves the next request.
            let small = try await RawClient.connect(port: port)
            defer { small.close() }
            await small.send(
                "POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "a", count: 1000)
            )
            #expect(await small.waitFor(.seconds(20)) { $0.statuses == [401] })
            await small.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await small.waitFor(.seconds(20)) { $0.statuses == [401, 200] }, "\(small.received)")
            #expect(!small.isClosed)

            // Refused with a megabyte still to come: marked and closed after the answer.
            let large = try await RawClient.connect(port: port)
            defer { large.close() }
            await large.send("POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc")
            #expect(await large.waitFor(.seconds(20)) { $0.isClosed }, "\(large.received)")
            #expect(large.statuses == [401])
            #expect(large.received.lowercased().contains("\r\nconnection: close\r\n"))

            // The client waits for `100 Continue` it will never get: the connection cannot be reused.
            let waiting = try await RawClient.connect(port: port)
            defer { waiting.close() }
            await waiting.send("POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
            #expect(await waiting.waitFor(.seconds(20)) { $0.isClosed }, "\(waiting.received)")
            #expect(waiting.statuses == [401])
        }
    }

    @Test func theRestOfAnAnsweredBodyMustArriveWithinTheHeaderDeadline() async throws {
        try await withServer(HTTPServerSettings(headerTimeoutSeconds: 1, idleTimeoutSeconds: 60)) { port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            await client.send("POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
            #expect(await client.waitFor(.seconds(20)) { $0.statuses == [401] })
            #expect(await client.waitFor(.seconds(30)) { $0.isClosed }, "the rest of the body was awaited forever")
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrderAndNothingAfterACloseIsRead() async throws {
        try await withServer { port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            await client.send(
                """
                GET /ok HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
                3\r\nabc\r\n0\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n
                """)
            #expect(await client.waitFor(.seconds(20)) { $0.isClosed }, "\(client.received)")
            #expect(client.statuses == [200, 200, 200], "\(client.received)")
            #expect(client.received.contains("\r\n\r\nabc"))
        }
    }

    @Test func aBodyCutShortByAParseErrorNeverReachesTheHandlerAsComplete() async throws {
        try await withServer { port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            await client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n")
            #expect(await client.waitFor(.seconds(20)) { $0.isClosed }, "\(client.received)")
            #expect(client.statuses == [400], "\(client.received)")
            #expect(!client.received.contains("abc"))
        }
    }

    /// NIO hands accepted connections to the server's accept loop through a stream, and a server task cancelled
    /// right after a burst of connections leaves some of them in it, never served. Releasing such a connection
    /// must not take the process down: wrapped the usual way (`wrappingChannelSynchronously`), NIO traps on it,
    /// which ends this test process with "Deinited NIOAsyncWriter without calling finish()" within a round or
    /// two.
    @Test func aServerCancelledWithConnectionsItHadNotTakenYetEndsCleanly() async throws {
        for _ in 0..<5 {
            let router = Router(context: LatchkeyRequestContext.self)
            router.get("/ok") { _, _ -> String in "ok" }
            let (ports, announce) = AsyncStream<Int>.makeStream()
            let app = Application(
                router: router, server: .latchkey(.init()),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { announce.yield($0.localAddress?.port ?? 0) })
            let server = Task { try await app.run() }
            var running = ports.makeAsyncIterator()
            let port = try #require(await running.next())
            let clients = try await withThrowingTaskGroup(of: RawClient.self) { group in
                for _ in 0..<64 { group.addTask { try await RawClient.connect(port: port) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            server.cancel()
            _ = await server.result
            for client in clients { client.close() }
        }
    }

    static let otherLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    @Test func requestsAreHandledOnTheirConnectionsEventLoop() async throws {
        try await withServer { port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            for _ in 0..<3 {
                await client.send("GET /where HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            #expect(await client.waitFor(.seconds(20)) { $0.statuses == [200, 200, 200] }, "\(client.received)")
            #expect(client.received.ranges(of: "its event loop").count == 3, "\(client.received)")
        }
    }

    @Test func settingsAreReadFromTheEnvironment() throws {
        func read(_ environment: [String: String]) throws -> HTTPServerSettings {
            try HTTPServerSettings(
                reader: ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: environment)]))
        }
        #expect(
            try read([:]) == HTTPServerSettings(headerTimeoutSeconds: 10, idleTimeoutSeconds: 60, maxConnections: 4096))
        #expect(
            try read([
                "HTTP_HEADER_TIMEOUT_SECONDS": "3", "HTTP_IDLE_TIMEOUT_SECONDS": "30", "HTTP_MAX_CONNECTIONS": "50",
            ])
                == HTTPServerSettings(headerTimeoutSeconds: 3, idleTimeoutSeconds: 30, maxConnections: 50))
        #expect(throws: ConfigurationError.self) { try read(["HTTP_HEADER_TIMEOUT_SECONDS": "0"]) }
        #expect(throws: ConfigurationError.self) { try read(["HTTP_IDLE_TIMEOUT_SECONDS": "100000"]) }
        #expect(throws: ConfigurationError.self) { try read(["HTTP_MAX_CONNECTIONS": "0"]) }
    }
}
