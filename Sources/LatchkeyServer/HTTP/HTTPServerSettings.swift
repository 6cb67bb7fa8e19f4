import Configuration
import HummingbirdCore
import LatchkeyCore
import NIOCore

/// Connection limits every Latchkey HTTP server applies, read the same way by all four services:
/// `HTTP_HEADER_TIMEOUT_SECONDS` (default 10: a request head must be complete this long after its
/// first byte), `HTTP_IDLE_TIMEOUT_SECONDS` (default 60: the longest silence of a client the server
/// is waiting for, between requests or inside a request body) and `HTTP_MAX_CONNECTIONS` (default
/// 4096: connections served at once; further ones wait in the listen backlog).
public struct HTTPServerSettings: Sendable, Equatable {
    public var headerTimeoutSeconds: Int
    public var idleTimeoutSeconds: Int
    public var maxConnections: Int

    public init(headerTimeoutSeconds: Int = 10, idleTimeoutSeconds: Int = 60, maxConnections: Int = 4096) {
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxConnections = maxConnections
    }

    public init(reader: ConfigReader) throws {
        let defaults = HTTPServerSettings()
        let env = SettingsReader(reader)
        self.init(
            headerTimeoutSeconds: try env.int(
                "http.header.timeout.seconds", default: defaults.headerTimeoutSeconds, range: 1...600),
            idleTimeoutSeconds: try env.int(
                "http.idle.timeout.seconds", default: defaults.idleTimeoutSeconds, range: 1...3_600),
            maxConnections: try env.int("http.max.connections", default: defaults.maxConnections, range: 1...1_000_000))
    }

    var headerTimeout: TimeAmount { .seconds(Int64(headerTimeoutSeconds)) }
    var idleTimeout: TimeAmount { .seconds(Int64(idleTimeoutSeconds)) }

    /// Stops accepting connections while `maxConnections` are open (Hummingbird's own limiter).
    public var connectionLimit: any AvailableConnectionsDelegate {
        MaximumAvailableConnections(maxConnections)
    }
}
