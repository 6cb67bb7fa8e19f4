import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of another loopback port, for "the dependency hangs" tests. Until
/// ``freeze()`` it copies bytes both ways; afterwards it stops reading and writing but keeps every
/// connection open and accepts new ones without ever answering: to the client the server looks alive
/// and never replies, the hardest failure to shut down through (no error, no close, only waiting).
public final class FreezableTCPRelay: Sendable {
    public let port: Int
    private let target: Int
    private let listener: Int32
    private let state = Mutex(State())

    private struct State {
        var frozen = false
        var closed = false
        var sockets: [Int32] = []
    }

    public init(forwardingTo target: Int) throws {
        let (fd, port) = try listenOnLoopback()
        self.listener = fd
        self.port = port
        self.target = target
        let relay = self
        Thread.detachNewThread { relay.acceptLoop() }
    }

    /// Stops relaying; connections stay open and silent.
    public func freeze() {
        state.withLock { $0.frozen = true }
    }

    /// Closes the listener and every relayed connection. Sockets are only shut down here; each pair is
    /// closed by the last of its two copy threads, so no thread ever touches a number the system reused.
    public func close() {
        // Under the lock: a pair is forgotten under it before its sockets are closed.
        let first = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
            return true
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    deinit { close() }

    private var isFrozen: Bool { state.withLock { $0.frozen } }

    private func acceptLoop() {
        defer { Glibc.close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            guard let upstream = connectToTarget() else {
                Glibc.close(client)
                continue
            }
            let keep = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.sockets += [client, upstream]
                return true
            }
            guard keep else {
                Glibc.close(client)
                Glibc.close(upstream)
                return
            }
            let relay = self
            let pair = Pair(client, upstream) {
                // Forgotten before they are closed, so close() never shuts down a reused number.
                relay.state.withLock { $0.sockets.removeAll { $0 == client || $0 == upstream } }
            }
            Thread.detachNewThread {
                relay.copy(from: client, to: upstream)
                pair.finished()
            }
            Thread.detachNewThread {
                relay.copy(from: upstream, to: client)
                pair.finished()
            }
        }
    }

    private func connectToTarget() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(target).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    /// Copies until either side closes; once frozen, holds what it has and reads no more.
    private func copy(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            // Waits for readable data in short steps, so a freeze stops the copy before the next read.
            var poller = pollfd(fd: source, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 50)
            if isFrozen {
                while !state.withLock({ $0.closed }) { usleep(50_000) }
                return
            }
            guard ready >= 0 else { return }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else {
                shutdown(destination, Int32(SHUT_WR))
                return
            }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + written, count - written) }
                guard step > 0 else { return }
                written += step
            }
        }
    }
}

/// The two sockets of one relayed connection, closed when both copy threads are done with them.
private final class Pair: Sendable {
    private let sockets: (Int32, Int32)
    private let remaining = Mutex(2)
    private let forget: @Sendable () -> Void

    init(_ first: Int32, _ second: Int32, forget: @escaping @Sendable () -> Void) {
        sockets = (first, second)
        self.forget = forget
    }

    func finished() {
        guard
            remaining.withLock({ count -> Bool in
                count -= 1
                return count == 0
            })
        else { return }
        forget()
        Glibc.close(sockets.0)
        Glibc.close(sockets.1)
    }
}
