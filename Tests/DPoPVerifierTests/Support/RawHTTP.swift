import Foundation
import LatchkeyTestSupport
import NIOCore
import NIOPosix

/// Sends raw bytes over TCP and returns what the server answers: the first complete answer, or with
/// `untilClosed` everything until it closes the connection; fails after `timeout` (for requests no
/// HTTP client library would send).
func rawHTTP(port: Int, _ request: String, untilClosed: Bool = false, timeout: Duration = .seconds(20)) async throws
    -> String
{
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
    return try await withThrowingTaskGroup(of: String.self) { group in
        group.addTask {
            try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: request))
                var received = ""
                for try await chunk in inbound {
                    received += String(buffer: chunk)
                    if !untilClosed, received.contains("\r\n\r\n"), received.hasPrefix("HTTP/1.1"),
                        RawHTTPAnswer.isComplete(received)
                    {
                        break
                    }
                }
                return received
            }
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TestFailure("no complete answer within \(timeout)")
        }
        let answer = try await group.next() ?? ""
        group.cancelAll()
        return answer
    }
}

private enum RawHTTPAnswer {
    /// True once the head and a Content-Length body have arrived.
    static func isComplete(_ text: String) -> Bool {
        guard let headEnd = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<headEnd.lowerBound].lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return true }
        return text[headEnd.upperBound...].utf8.count >= length
    }
}
