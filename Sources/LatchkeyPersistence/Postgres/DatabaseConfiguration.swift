import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

/// Connection settings for one PostgreSQL role, parsed from a `postgres://` URL.
public struct DatabaseConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var useTLS: Bool
    /// With TLS: the server certificate must name `host` (`sslmode=verify-full`, and `require`); `verify-ca` only
    /// checks that it chains to a trusted CA.
    public var verifiesHostname = true
    /// With TLS: PEM file of the CA(s) the server certificate must chain to (`sslrootcert`), e.g. CloudNativePG's
    /// cluster CA; nil trusts the system store.
    public var rootCertificatePath: String?
    public var maximumConnections: Int
    /// Connections kept open even when idle (`pool_min`): all of them unless set lower. A connection above
    /// the minimum closes after 60 s unused, and PostgresNIO gives it an idle timer each time it goes back to
    /// the pool (a few tasks per statement under load); a fixed pool has none.
    public var minimumConnections: Int {
        get { min(keptOpen ?? maximumConnections, maximumConnections) }
        set { keptOpen = newValue }
    }
    private var keptOpen: Int?
    /// How often the connections kept open are checked with `SELECT 1` (`pool_keepalive`, seconds); nil sends
    /// none. The services' `ConnectionKeepAlive` sends the checks, one round per interval for the whole pool.
    public var keepAliveInterval: Duration? = .seconds(60)
    public var statementTimeoutMilliseconds: Int
    public var applicationName: String

    public init(
        host: String, port: Int = 5432, username: String, password: String?, database: String,
        useTLS: Bool = false, maximumConnections: Int = 10, statementTimeoutMilliseconds: Int = 5_000,
        applicationName: String = "latchkey"
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.useTLS = useTLS
        self.maximumConnections = maximumConnections
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        self.applicationName = applicationName
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=require&pool_max=10&statement_timeout=5000`;
    /// `sslrootcert=/path/ca.crt` trusts that CA for `sslmode` `verify-full`, `verify-ca` or `require`;
    /// `pool_min` (0 to `pool_max`, default `pool_max`) and `pool_keepalive` (seconds, 0 for none) tune the pool.
    public init(url: String) throws(ConfigurationError) {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme),
            let host = components.host, !host.isEmpty,
            let user = components.user, !user.isEmpty
        else {
            throw ConfigurationError("database URL must look like postgres://user:password@host:port/database")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw ConfigurationError("database URL names no database") }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        self.init(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 }, database: database,
            useTLS: ["require", "verify-full", "verify-ca"].contains(query["sslmode"] ?? "disable"),
            maximumConnections: query["pool_max"].flatMap(Int.init) ?? 10,
            statementTimeoutMilliseconds: query["statement_timeout"].flatMap(Int.init) ?? 5_000,
            applicationName: query["application_name"] ?? "latchkey"
        )
        verifiesHostname = query["sslmode"] != "verify-ca"
        if let value = query["pool_min"] {
            guard let count = Int(value), (0...maximumConnections).contains(count) else {
                throw ConfigurationError(
                    "database URL's pool_min must be a number from 0 to pool_max (\(maximumConnections))")
            }
            minimumConnections = count
        }
        if let value = query["pool_keepalive"] {
            guard let seconds = Int(value), (0...3600).contains(seconds) else {
                throw ConfigurationError(
                    "database URL's pool_keepalive must be a number of seconds from 0 (none) to 3600")
            }
            keepAliveInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        if let path = query["sslrootcert"], !path.isEmpty {
            // libpq would ignore the file without TLS; here the connection would silently stay unencrypted.
            guard useTLS else {
                throw ConfigurationError(
                    "database URL sets sslrootcert without sslmode=verify-full, verify-ca or require")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw ConfigurationError("database URL's sslrootcert names a file that cannot be read (\(path))")
            }
            rootCertificatePath = path
        }
    }

    /// TLS as the URL asks for it: nil when off, else verified against the system store or `sslrootcert`.
    var tlsConfiguration: TLSConfiguration? {
        guard useTLS else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificatePath { configuration.trustRoots = .file(rootCertificatePath) }
        if !verifiesHostname { configuration.certificateVerification = .noHostnameVerification }
        return configuration
    }

    /// The PostgresNIO client configuration: bounded pool, statement timeout set at connection start, and
    /// none of PostgresNIO's per-connection keep-alive timers (``keepAliveInterval`` is checked by rounds).
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: tlsConfiguration.map { .require($0) } ?? .disable)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.minimumConnections = minimumConnections
        configuration.options.keepAliveBehavior = nil
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", String(statementTimeoutMilliseconds)),
            ("application_name", applicationName),
        ]
        return configuration
    }

    /// This configuration with connections opened only when a statement needs one, for a command that runs a
    /// few statements and exits.
    public var onDemand: DatabaseConfiguration {
        var configuration = self
        configuration.minimumConnections = 0
        return configuration
    }

    /// A `PostgresClient` for this configuration; run it as a Service.
    public func makeClient(logger: Logger) -> PostgresClient {
        PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
    }
}
