import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A built Latchkey executable run as a child process, for start-up and shutdown tests.
public final class ServiceProcess: Sendable {
    public let name: String
    public let port: Int
    /// Where `/healthz`, `/readyz`, `/metrics` and `/openapi.json` answer.
    public let managementPort: Int
    private let child: ChildProcess

    /// The folder holding the executables `swift build` produced next to this test bundle.
    public static var binaryFolder: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Starts `name` with `environment` added to this process's environment and `HTTP_PORT` set
    /// (to `port`, or a random one); `MANAGEMENT_PORT` too, unless `environment` sets it.
    public init(_ name: String, arguments: [String] = [], environment: [String: String], port: Int? = nil) throws {
        self.name = name
        self.port = port ?? Self.freePort()
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        env["HTTP_PORT"] = String(self.port)
        let management = environment["MANAGEMENT_PORT"].flatMap { Int($0) } ?? Self.freePort()
        env["MANAGEMENT_PORT"] = String(management)
        self.managementPort = management
        env["LOG_LEVEL"] = env["LOG_LEVEL"] ?? "info"
        child = try ChildProcess(
            executable: Self.binaryFolder.appendingPathComponent(name).path, arguments: arguments, environment: env)
    }

    /// `http://127.0.0.1:<management port>`.
    public var managementURL: String { "http://127.0.0.1:\(managementPort)" }

    /// Polls `GET /healthz` on the management port until it answers 200 (it answers 503 until the service
    /// port listens); false if the process exits or time runs out.
    public func waitUntilHealthy(timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, child.isRunning {
            let request = HTTPClientRequest(url: "\(managementURL)/healthz")
            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)),
                response.status == .ok
            {
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Sends `signal` and waits for the exit; returns the exit status, or nil if it did not exit in time.
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(15)) async -> Int32? {
        child.send(signal)
        return await waitForExit(timeout: timeout)
    }

    /// Waits for the process to end on its own; kills it (and answers nil) when it does not in time.
    public func waitForExit(timeout: Duration) async -> Int32? {
        if let status = await child.waitForExit(timeout: timeout) { return status }
        child.send(SIGKILL)
        _ = await child.waitForExit(timeout: .seconds(5))
        return nil
    }

    /// A loopback TCP port nothing listens on, for a server that binds it a little later. Picked below the
    /// kernel's ephemeral range (32768–60999), where no outgoing connection (to PostgreSQL, Kafka, …) can take
    /// it in between, and handed out in sequence so that no two callers of this process get the same one;
    /// each candidate is bound once to check that it is free.
    public static func freePort() -> Int {
        while true {
            let offset = portCounter.add(1, ordering: .relaxed).oldValue
            let port = portBase + offset % portSpan
            if canBind(port) { return port }
        }
    }

    /// Every base plus the span stays below 32768: a port inside the ephemeral range can be taken, between
    /// the check and the bind, as the local port of any outgoing connection, and a management listener that
    /// cannot bind stops its whole application.
    private static let portSpan = 12_000
    /// Another test process (another checkout's suite) starts elsewhere in the range.
    private static let portBase = 16_000 + Int(getpid() % 40) * 100
    private static let portCounter = Atomic<Int>(0)

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// The process id, e.g. to read its resident memory from `/proc`.
    public var pid: Int32 { child.pid }

    /// Everything the process wrote to stdout and stderr so far.
    public func capturedOutput() -> String { child.output() }
}
