import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import DPoPVerifier

/// An upstream connection is reused only when the upstream sent exactly the responses asked for: bytes after a
/// response's end, however they are split into reads, close it instead of reaching the next request.
@Suite struct UpstreamConnectionReuseTests {
    /// Records what the connection delivers and, like the pool, lets go of the connection at the response's end.
    final class Exchange: UpstreamConnectionDelegate {
        let connection: UpstreamConnection
        var statuses: [UInt] = []
        var body = ""
        var ended = 0

        init(_ connection: UpstreamConnection) {
            self.connection = connection
        }

        func upstreamHead(_ head: HTTPResponseHead) { statuses.append(head.status.code) }
        func upstreamBody(_ body: ByteBuffer) { self.body += String(buffer: body) }
        func upstreamEnd() {
            ended += 1
            connection.delegate = nil
        }
        func upstreamReadComplete() {}
        func upstreamFailed(_ error: any Error) {}
        func upstreamWritable() {}
        var clientWritable: Bool { true }
    }

    /// Sends `method /` on a fresh connection, feeds `reads` as the upstream's bytes and returns what came of it.
    func exchange(_ method: HTTPMethod, reads: [String]) throws -> (exchange: Exchange, reusable: Bool, open: Bool) {
        let channel = EmbeddedChannel()
        let counter = UpstreamByteCounter()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHTTPClientHandlers()
        let connection = UpstreamConnection(counter: counter)
        try channel.pipeline.syncOperations.addHandler(connection)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        let exchange = Exchange(connection)
        connection.delegate = exchange
        connection.write(
            .head(HTTPRequestHead(version: .http1_1, method: method, uri: "/", headers: ["Host": "upstream"])))
        connection.write(.end(nil))
        connection.flushWritten()
        for read in reads { try channel.writeInbound(ByteBuffer(string: read)) }
        let result = (exchange, connection.isReusable, channel.isActive)
        _ = try? channel.finish()
        return result
    }

    @Test func exactResponsesKeepTheConnectionHoweverTheyAreSplit() throws {
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let splits = [
            [response], [String(response.prefix(20)), String(response.dropFirst(20))],
            response.map { String($0) },
        ]
        for reads in splits {
            let outcome = try exchange(.GET, reads: reads)
            #expect(outcome.reusable && outcome.open, "\(reads.count) reads")
            #expect(outcome.exchange.statuses == [200] && outcome.exchange.body == "ok" && outcome.exchange.ended == 1)
        }
        let head = try exchange(.HEAD, reads: ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"])
        #expect(head.reusable && head.open, "a HEAD answer announcing a length but sending no body is exact")
    }

    @Test func bytesBeyondTheResponseCloseTheConnection() throws {
        let smuggled = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbad"
        let cases: [(String, HTTPMethod, [String])] = [
            ("a body on a HEAD answer", .HEAD, ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"]),
            ("a response after a 204", .GET, ["HTTP/1.1 204 No Content\r\n\r\n" + smuggled]),
            ("a response after a HEAD answer", .HEAD, ["HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n" + smuggled]),
            ("one byte after the body", .GET, ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokH"]),
            (
                "part of a head after the body", .GET,
                ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Le"]
            ),
            ("part of a head in a later read", .GET, ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1."]),
        ]
        for (label, method, reads) in cases {
            let outcome = try exchange(method, reads: reads)
            #expect(!outcome.reusable, "\(label): still reusable")
            #expect(!outcome.open, "\(label): still open")
            #expect(
                outcome.exchange.statuses.count == 1 && outcome.exchange.ended == 1,
                "\(label): \(outcome.exchange.statuses)")
            #expect(!outcome.exchange.body.contains("bad"), "\(label): the extra response reached the exchange")
        }
    }
}
