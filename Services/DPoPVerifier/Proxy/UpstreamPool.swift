import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Waits for an upstream connection from an ``UpstreamPool``.
protocol UpstreamLeaseHolder: AnyObject {
    /// A connection for the holder's request. A holder that no longer needs it returns it with `release`.
    func leased(_ connection: UpstreamConnection)
    func leaseFailed(_ error: any Error)
}

/// Keep-alive HTTP/1.1 connections to the upstream, owned by one event loop: the server
/// connections of that loop lease from it, so a proxied request never leaves its thread.
///
/// At most `maxConnections` connections are open (or opening) per event loop; requests beyond
/// that wait in FIFO order (bounded in time by the proxy's total timeout).
final class UpstreamPool {
    let eventLoop: any EventLoop
    /// Flushes the loop's upstream and client writes at the end of each round.
    let flusher: RoundFlusher
    private let endpoint: UpstreamEndpoint
    private let maxConnections: Int
    private var idle: [UpstreamConnection] = []
    private var open = 0
    private var waiters = CircularBuffer<any UpstreamLeaseHolder>()

    init(eventLoop: any EventLoop, endpoint: UpstreamEndpoint, maxConnections: Int) {
        self.eventLoop = eventLoop
        flusher = RoundFlusher(eventLoop: eventLoop)
        self.endpoint = endpoint
        self.maxConnections = maxConnections
    }

    func lease(for holder: any UpstreamLeaseHolder) {
        eventLoop.preconditionInEventLoop()
        while let connection = idle.popLast() {
            if connection.isReusable {
                holder.leased(connection)
                return
            }
            connection.abandon()
        }
        if open < maxConnections {
            connect(for: holder)
        } else {
            waiters.append(holder)
        }
    }

    /// Gives a connection back; `reusable` when its last exchange ended cleanly (request sent,
    /// response read, keep-alive).
    func release(_ connection: UpstreamConnection, reusable: Bool) {
        connection.delegate = nil
        // A read held back for a slow client must not stay held for the next request.
        connection.resumeReading()
        guard reusable, connection.isReusable else {
            connection.abandon()
            return
        }
        // Not handed on right here: this runs inside the decoder's callback for the response's end, and what
        // the upstream sent behind it in the same read is decoded only afterwards. On the next tick it has been,
        // with no request to claim it, and the connection is checked again.
        eventLoop.assumeIsolated().execute { self.handOver(connection) }
    }

    private func handOver(_ connection: UpstreamConnection) {
        guard connection.isReusable else {
            connection.abandon()
            return
        }
        if let waiter = waiters.popFirst() {
            waiter.leased(connection)
        } else {
            idle.append(connection)
        }
    }

    /// A connection of this pool closed.
    func closed(_ connection: UpstreamConnection) {
        open -= 1
        idle.removeAll { $0 === connection }
        if let waiter = waiters.popFirst() { connect(for: waiter) }
    }

    private func connect(for holder: any UpstreamLeaseHolder) {
        open += 1
        endpoint.bootstrap(on: eventLoop).connect(host: endpoint.host, port: endpoint.port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    do {
                        let connection = try channel.pipeline.syncOperations.handler(type: UpstreamConnection.self)
                        connection.pool = self
                        holder.leased(connection)
                    } catch {
                        // Not reachable: the initializer always adds the handler.
                        self.open -= 1
                        channel.close(promise: nil)
                        holder.leaseFailed(error)
                    }
                case .failure(let error):
                    self.open -= 1
                    holder.leaseFailed(error)
                    if self.open < self.maxConnections, let waiter = self.waiters.popFirst() {
                        self.connect(for: waiter)
                    }
                }
            }
    }
}

/// Where the upstream is and how to connect to it (TLS for https).
struct UpstreamEndpoint: Sendable {
    let host: String
    let port: Int
    let connectTimeout: TimeAmount
    let tls: NIOSSLContext?

    init(settings: UpstreamSettings) throws {
        let https = settings.origin.hasPrefix("https://")
        let authority = settings.origin.dropFirst(https ? 8 : 7)
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            port = Int(authority[close...].dropFirst(2)) ?? (https ? 443 : 80)
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? (https ? 443 : 80)
        } else {
            host = String(authority)
            port = https ? 443 : 80
        }
        connectTimeout = .milliseconds(Int64(settings.connectTimeoutMilliseconds))
        tls = https ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
    }

    func bootstrap(on eventLoop: any EventLoop) -> ClientBootstrap {
        let tls = self.tls
        // SNI takes names only, never address literals.
        let serverName = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    // Outbound header validation is off: every field of an upstream request head is either an
                    // incoming one (already held to RFC 9110 by the request parser), a constant, a configured
                    // origin, or an identity value that `IdentityHeaders` drops when it has a control
                    // character; re-checking each byte cost ~3 % of the sidecar's CPU per request.
                    let counter = UpstreamByteCounter()
                    try channel.pipeline.syncOperations.addHandler(counter)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
                    try channel.pipeline.syncOperations.addHandler(UpstreamConnection(counter: counter))
                }
            }
    }
}

/// One ``UpstreamPool`` per event loop, created on first use.
final class UpstreamPools: Sendable {
    private let endpoint: UpstreamEndpoint
    private let maxConnections: Int
    private let pools = NIOLockedValueBox<[ObjectIdentifier: NIOLoopBound<UpstreamPool>]>([:])

    init(settings: UpstreamSettings) throws {
        endpoint = try UpstreamEndpoint(settings: settings)
        maxConnections = settings.maxConnections
    }

    /// The pool of `eventLoop` (call on that loop; the pool never leaves it).
    func pool(for eventLoop: any EventLoop) -> UpstreamPool {
        let endpoint = self.endpoint
        let maxConnections = self.maxConnections
        let bound = pools.withLockedValue { pools in
            if let pool = pools[ObjectIdentifier(eventLoop)] { return pool }
            let pool = NIOLoopBound(
                UpstreamPool(eventLoop: eventLoop, endpoint: endpoint, maxConnections: maxConnections),
                eventLoop: eventLoop)
            pools[ObjectIdentifier(eventLoop)] = pool
            return pool
        }
        return bound.value
    }
}
