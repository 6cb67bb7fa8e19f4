import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyPersistence

/// `sslmode` and `sslrootcert` against a real PostgreSQL with `ssl=on` whose certificate a private CA signed
/// (like CloudNativePG's): a cluster of its own in a temporary folder, made with `initdb`.
@Suite(.serialized) struct PostgresTLSTests {
    @Test func theConfiguredCAIsTrustedAndNoOtherIs() async throws {
        let server = try await TLSPostgres.start()
        do {
            try await check(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func check(_ server: TLSPostgres) async throws {
        func url(host: String, mode: String, ca: String) -> String {
            "postgres://postgres@\(host):\(server.port)/postgres?sslmode=\(mode)&sslrootcert=\(ca)"
        }

        // verify-full: the CA signed the certificate and the certificate names `localhost`.
        #expect(try await Self.encrypted(url(host: "localhost", mode: "verify-full", ca: server.caPath)))
        // verify-ca: the chain is checked but not the name (the certificate does not name 127.0.0.1).
        #expect(try await Self.encrypted(url(host: "127.0.0.1", mode: "verify-ca", ca: server.caPath)))

        // Another CA, or a name the certificate does not hold, fails the handshake with a certificate error.
        let wrongCA = try await Self.failure(url(host: "localhost", mode: "verify-full", ca: server.otherCAPath))
        #expect(
            wrongCA.contains("certificate verify failed") || wrongCA.contains("CERTIFICATE_VERIFY_FAILED"), "\(wrongCA)"
        )
        let wrongName = try await Self.failure(url(host: "127.0.0.1", mode: "verify-full", ca: server.caPath))
        #expect(wrongName.lowercased().contains("hostname") || wrongName.contains("certificate"), "\(wrongName)")
        // The system trust store does not hold the private CA.
        let system = try await Self.failure("postgres://postgres@localhost:\(server.port)/postgres?sslmode=verify-full")
        #expect(system.contains("CERTIFICATE_VERIFY_FAILED"), "\(system)")
    }

    @Test func aRootCertificateWithoutTLSOrUnreadableIsRefused() {
        #expect(throws: ConfigurationError.self) {
            try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?sslrootcert=/etc/hostname")
        }
        do {
            _ = try DatabaseConfiguration(
                url: "postgres://u:p@db:5432/d?sslmode=verify-full&sslrootcert=/nonexistent/ca")
            Issue.record("an unreadable sslrootcert was accepted")
        } catch {
            #expect(error.description.contains("sslrootcert names a file that cannot be read (/nonexistent/ca)"))
            #expect(!error.description.contains("u:p"))
        }
        let parsed = try? DatabaseConfiguration(
            url: "postgres://u:p@db:5432/d?sslmode=verify-ca&sslrootcert=/etc/hostname")
        #expect(parsed?.rootCertificatePath == "/etc/hostname")
        #expect(parsed?.verifiesHostname == false)
        let required = try? DatabaseConfiguration(url: "postgres://u:p@db:5432/d?sslmode=require")
        #expect(required?.verifiesHostname == true && required?.useTLS == true)
    }

    /// Whether the session `url` opens is encrypted, as the server sees it.
    static func encrypted(_ url: String) async throws -> Bool {
        try await withPostgresClient(try DatabaseConfiguration(url: url)) { client in
            let rows = try await client.query(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: TestEnvironment.logger)
            for try await ssl in rows.decode(Bool.self) { return ssl }
            return false
        }
    }

    /// The error one connection to `url`, with the TLS settings the client pool would use, fails with (the pool
    /// itself keeps retrying); the test fails when it connects.
    static func failure(_ url: String) async throws -> String {
        let configuration = try DatabaseConfiguration(url: url)
        let tls = try #require(configuration.tlsConfiguration)
        do {
            let connection = try await PostgresConnection.connect(
                configuration: .init(
                    host: configuration.host, port: configuration.port, username: configuration.username,
                    password: configuration.password, database: configuration.database,
                    tls: .require(try NIOSSLContext(configuration: tls))),
                id: 1, logger: TestEnvironment.logger)
            try await connection.close()
            Issue.record("\(url) connected")
            return ""
        } catch {
            return String(reflecting: error)
        }
    }
}

/// A throwaway PostgreSQL 15 cluster with `ssl=on`: a private CA, a server certificate for `localhost` signed by
/// it, another CA that signed nothing, trust authentication on loopback.
struct TLSPostgres {
    let folder: URL
    let port: Int
    var caPath: String { folder.appendingPathComponent("ca.crt").path }
    var otherCAPath: String { folder.appendingPathComponent("other-ca.crt").path }
    private var data: String { folder.appendingPathComponent("data").path }
    static let binaries = ProcessInfo.processInfo.environment["LATCHKEY_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
    /// PostgreSQL refuses to run as root.
    static let asPostgres = getuid() == 0 ? ["runuser", "-u", "postgres", "--"] : []

    static func start() async throws -> TLSPostgres {
        let folder = URL(fileURLWithPath: "/tmp/latchkey-pg-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let server = TLSPostgres(folder: folder, port: ServiceProcess.freePort())
        let path = folder.path
        let ssl = ["openssl"]
        try await run(
            ssl + [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=Latchkey test CA", "-keyout", "\(path)/ca.key", "-out", "\(path)/ca.crt",
            ])
        try await run(
            ssl + [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=Other CA", "-keyout", "\(path)/other-ca.key", "-out", "\(path)/other-ca.crt",
            ])
        try await run(
            ssl + [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                "-keyout", "\(path)/server.key", "-out", "\(path)/server.csr",
            ])
        try Data("subjectAltName=DNS:localhost\n".utf8).write(to: folder.appendingPathComponent("san.ext"))
        try await run(
            ssl + [
                "x509", "-req", "-in", "\(path)/server.csr", "-CA", "\(path)/ca.crt", "-CAkey", "\(path)/ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "\(path)/san.ext", "-out", "\(path)/server.crt",
            ])
        if getuid() == 0 { try await run(["chown", "-R", "postgres:postgres", path]) }
        try await run(["chmod", "600", "\(path)/server.key"])
        try await run(asPostgres + ["\(binaries)/initdb", "-D", server.data, "-U", "postgres", "--auth=trust"])
        let settings = """
            port = \(server.port)
            listen_addresses = '127.0.0.1'
            unix_socket_directories = '\(path)'
            ssl = on
            ssl_cert_file = '\(path)/server.crt'
            ssl_key_file = '\(path)/server.key'
            fsync = off

            """
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(server.data)/postgresql.conf"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
        try await run(
            asPostgres + [
                "\(binaries)/pg_ctl", "-D", server.data, "-l", "\(path)/postgres.log", "-w", "-t", "60", "start",
            ])
        return server
    }

    func stop() async {
        _ = try? await Self.run(
            Self.asPostgres + ["\(Self.binaries)/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs a command to its end (at most two minutes); its output becomes the error when it fails.
    @discardableResult
    static func run(_ arguments: [String]) async throws -> String {
        let child = try ChildProcess(
            executable: "/usr/bin/env", arguments: arguments, environment: ProcessInfo.processInfo.environment)
        let status = await child.waitForExit(timeout: .seconds(120))
        guard status == 0 else {
            if status == nil { child.send(SIGKILL) }
            throw CommandFailed(description: "\(arguments.joined(separator: " ")) failed: \(child.output())")
        }
        return child.output()
    }
}
