import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One keep-alive client connection to a loopback port on a raw socket: requests are written byte for byte and
/// responses read by their own framing, so the test sees exactly what the server sent on this connection.
final class RawHTTPConnection {
    private let fd: Int32
    private var pending: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 30) throws {
        fd = try connectToLoopback(port: port, timeoutSeconds: timeoutSeconds)
    }

    deinit { close(fd) }

    func send(_ request: String) throws {
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count
        else {
            throw RawHTTPFailure("send failed")
        }
    }

    /// The next response: status, head and, unless `bodyless` (an answer to HEAD, or a 1xx/204/304), the
    /// `Content-Length` bytes of its body.
    func readResponse(bodyless: Bool) throws -> (status: Int, head: String, body: String) {
        var end: Int?
        while end == nil {
            end = endOfHTTPHead(pending)
            if end == nil { try receive() }
        }
        let head = String(decoding: pending[..<end!], as: UTF8.self)
        pending.removeFirst(end! + 4)
        let parts = head.prefix { $0 != "\r" }.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw RawHTTPFailure("no status line: \(head)") }
        let length =
            head.split(separator: "\r\n").dropFirst().compactMap { line -> Int? in
                let field = line.split(separator: ":", maxSplits: 1)
                guard field.count == 2, field[0].lowercased() == "content-length" else { return nil }
                return Int(field[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        let bodyLength = bodyless || status == 204 || status == 304 || status < 200 ? 0 : length
        while pending.count < bodyLength { try receive() }
        let body = String(decoding: pending.prefix(bodyLength), as: UTF8.self)
        pending.removeFirst(bodyLength)
        return (status, head, body)
    }

    private func receive() throws {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw RawHTTPFailure("the connection ended or timed out before the response was complete")
        }
        pending += chunk[..<count]
    }
}
