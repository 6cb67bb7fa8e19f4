import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One request written byte for byte to a loopback port, for targets an HTTP client would re-encode
/// (`%u002e` becomes `%25u002e` in AsyncHTTPClient). Answers the status code of the response.
func rawHTTPStatus(port: Int, _ request: String, timeoutSeconds: Int = 30) throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPFailure("socket() failed") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw RawHTTPFailure("connect to port \(port) failed") }
    let bytes = Array(request.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else { throw RawHTTPFailure("send failed") }
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
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0 }
        }
        guard bound, listen(listening, 16) == 0 else { close(listening); throw RawHTTPFailure("could not listen") }
        fd = listening
        port = Int(UInt16(bigEndian: address.sin_port))
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
