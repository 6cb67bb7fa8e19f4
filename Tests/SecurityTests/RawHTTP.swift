import Foundation
import LatchkeyTestSupport

#if canImport(Glibc)
    import Glibc
    import Testing
#endif

/// A TCP connection to 127.0.0.1:`port` whose reads give up after `timeoutSeconds`; the caller closes it.
func connectToLoopback(port: Int, timeoutSeconds: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPFailure("socket() failed") }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        close(fd)
        throw RawHTTPFailure("connect to port \(port) failed")
    }
    return fd
}

/// The index of the blank line ending an HTTP head in `bytes`, if it is there yet.
func endOfHTTPHead(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 4 else { return nil }
    for index in 0...(bytes.count - 4)
    where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
        return index
    }
    return nil
}

/// One request written byte for byte to a loopback port, for targets an HTTP client would re-encode
/// (`%u002e` becomes `%25u002e` in AsyncHTTPClient). Answers the status code of the response.
func rawHTTPStatus(port: Int, _ request: String, timeoutSeconds: Int = 30) throws -> Int {
    let fd = try connectToLoopback(port: port, timeoutSeconds: timeoutSeconds)
    defer { close(fd) }
    let bytes = Array(request.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else {
        throw RawHTTPFailure("send failed")
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while !received.contains(UInt8(ascii: "\n")) {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        received += buffer[..<count]
    }
    let statusLine = String(decoding: received.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
    let parts = statusLine.split(separator: " ")
    guard parts.count >= 2, let status = Int(parts[1]) else { throw RawHTTPFailure("no status line: \(statusLine)") }
    return status
}

/// What a raw exchange answered: the status and the body (the service closes the connection after it).
struct RawHTTPResponse {
    let status: Int
    let body: [UInt8]
    var json: [String: Any] { TestJSON.object(body) }
    var error: String? { json["error"] as? String }
    var text: String { String(decoding: body.prefix(300), as: UTF8.self) }
}

/// Sends a request whose body is exact bytes (invalid UTF-8 included, which a `String` cannot carry) to
/// `url` (`http://127.0.0.1:port/path`) with `Connection: close`, and reads the whole answer.
func rawHTTPExchange(
    _ method: String, _ url: String, headers: [(String, String)] = [], body: [UInt8], timeoutSeconds: Int = 30
) throws -> RawHTTPResponse {
    guard let parts = URLComponents(string: url), let port = parts.port else {
        throw RawHTTPFailure("not a loopback URL: \(url)")
    }
    var head = "\(method) \(parts.percentEncodedPath) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    head += "Content-Length: \(body.count)\r\n\r\n"
    let fd = try connectToLoopback(port: port, timeoutSeconds: timeoutSeconds)
    defer { close(fd) }
    let bytes = Array(head.utf8) + body
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else {
        throw RawHTTPFailure("send failed")
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    let separator: [UInt8] = Array("\r\n\r\n".utf8)
    func headEnd() -> Int? { (0..<max(0, received.count - 3)).first { received[$0..<$0 + 4].elementsEqual(separator) } }
    // Until the server closes or, with a Content-Length, the whole body is in.
    while true {
        if let end = headEnd() {
            let head = String(decoding: received[..<end], as: UTF8.self).lowercased()
            let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
            if let length, received.count >= end + 4 + length { break }
        }
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        received += buffer[..<count]
    }
    guard let end = headEnd() else {
        throw RawHTTPFailure("no complete response head: \(String(decoding: received.prefix(200), as: UTF8.self))")
    }
    let statusLine = String(decoding: received.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
    let fields = statusLine.split(separator: " ")
    guard fields.count >= 2, let status = Int(fields[1]) else { throw RawHTTPFailure("no status line: \(statusLine)") }
    return RawHTTPResponse(status: status, body: Array(received[(end + 4)...]))
}

struct RawHTTPFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A TCP listener on 127.0.0.1 that counts the connections made to it and closes each at once: shows
/// whether a service tried to reach an address at all (whatever protocol it would have spoken).
final class ConnectionCounter: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var accepted = 0
    private var closed = false

    init() throws {
        let listening = try listenOnLoopback()
        fd = listening.fd
        port = listening.port
        Thread { [self] in acceptUntilStopped() }.start()
    }

    private func acceptUntilStopped() {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            lock.withLock { accepted += 1 }
            Glibc.close(client)
        }
    }

    var connections: Int { lock.withLock { accepted } }

    func stop() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }
    }

    deinit { stop() }
}
