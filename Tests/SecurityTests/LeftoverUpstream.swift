import Foundation
import LatchkeyTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A keep-alive HTTP/1.1 upstream on 127.0.0.1, written on raw sockets, that puts a second response nobody asked
/// for behind its answer to `HEAD /public/head-…` (200) and `GET /public/empty-…` (204), in the same write:
/// whole for `…-whole`; for `…-split` only its first bytes, the rest once another request arrives on the same
/// connection. Those answers are held until the test lets them go. Any other request gets 200 `second`.
final class LeftoverUpstream: @unchecked Sendable {
    static let leftover = "leftover of the first one"
    static let heldPaths = ["/public/head-whole", "/public/head-split", "/public/empty-whole", "/public/empty-split"]
    static let smuggled =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(leftover.utf8.count)\r\n\r\n" + leftover
    /// Where a `…-split` answer cuts the smuggled response: inside its head.
    static let splitAt = 30

    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var seen: [String] = []
    private var clients: [Int32] = []
    private var stopped = false
    private let gates: [String: DispatchSemaphore]

    init() throws {
        let listening = try listenOnLoopback()
        fd = listening.fd
        port = listening.port
        gates = Dictionary(uniqueKeysWithValues: Self.heldPaths.map { ($0, DispatchSemaphore(value: 0)) })
        Thread { [self] in acceptUntilStopped() }.start()
    }

    /// The request lines received so far, as `connection-number METHOD target`.
    var requests: [String] { lock.withLock { seen } }

    /// Lets the held answer to `path` go.
    func release(_ path: String) {
        gates[path]?.signal()
    }

    /// Waits (polling, generously) until a request for `path` has arrived.
    func waitForRequest(_ path: String, within limit: Duration = .seconds(30)) async throws {
        guard try await eventually(within: limit, { requests.contains(where: { $0.hasSuffix(" " + path) }) }) else {
            throw RawHTTPFailure("the upstream never got \(path): \(requests)")
        }
    }

    /// Wakes every thread; each closes its own socket, so no descriptor is closed while another thread may use it.
    func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            shutdown(fd, Int32(SHUT_RDWR))
            for client in clients { shutdown(client, Int32(SHUT_RDWR)) }
        }
        for gate in gates.values { gate.signal() }
    }

    deinit { stop() }

    private func acceptUntilStopped() {
        var number = 0
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else {
                close(fd)
                return
            }
            number += 1
            let connection = number
            let accepted = lock.withLock {
                if !stopped { clients.append(client) }
                return !stopped
            }
            guard accepted else {
                close(client)
                continue
            }
            Thread { [self] in serve(client, connection: connection) }.start()
        }
    }

    private func serve(_ client: Int32, connection: Int) {
        defer {
            lock.withLock {
                clients.removeAll { $0 == client }
                close(client)
            }
        }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // The rest of a split smuggled response, sent before answering the next request on this connection.
        var owed = ""
        while true {
            var headEnd = endOfHTTPHead(pending)
            while headEnd == nil {
                let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                pending += chunk[..<count]
                headEnd = endOfHTTPHead(pending)
            }
            guard let end = headEnd else { return }
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end + 4)
            let requestLine = head.prefix { $0 != "\r" }
            let parts = requestLine.split(separator: " ")
            let target = parts.count > 1 ? String(parts[1]) : ""
            lock.withLock { seen.append("\(connection) \(parts.first ?? "") \(target)") }
            var answer = owed
            owed = ""
            if let gate = gates[target] {
                _ = gate.wait(timeout: .now() + 60)
                answer +=
                    target.hasPrefix("/public/head-")
                    ? "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n"
                    : "HTTP/1.1 204 No Content\r\n\r\n"
                if target.hasSuffix("-split") {
                    answer += Self.smuggled.prefix(Self.splitAt)
                    owed = String(Self.smuggled.dropFirst(Self.splitAt))
                } else {
                    answer += Self.smuggled
                }
            } else {
                answer += "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nsecond"
            }
            let bytes = Array(answer.utf8)
            guard bytes.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count
            else { return }
        }
    }
}
