import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A built Latchkey executable run as a child process, for start-up and shutdown tests.
public final class ServiceProcess: Sendable {
    public let name: String
    public let port: Int
    private let child: ChildProcess

    /// The folder holding the executables `swift build` produced next to this test bundle.
    public static var binaryFolder: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Starts `name` with `environment` added to this process's environment and `HTTP_PORT` set.
    public init(_ name: String, arguments: [String] = [], environment: [String: String]) throws {
        self.name = name
        self.port = Int.random(in: 20_000...40_000)
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        env["HTTP_PORT"] = String(port)
        env["LOG_LEVEL"] = env["LOG_LEVEL"] ?? "info"
        child = try ChildProcess(
            executable: Self.binaryFolder.appendingPathComponent(name).path, arguments: arguments, environment: env)
    }

    /// Polls `GET /healthz` until it answers 200; false if the process exits or time runs out.
    public func waitUntilHealthy(timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, child.isRunning {
            let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz")
            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)), response.status == .ok {
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

    /// Everything the process wrote to stdout and stderr so far.
    public func capturedOutput() -> String { child.output() }
}
