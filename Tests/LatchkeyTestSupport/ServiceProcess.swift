import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A built Latchkey executable run as a child process, for start-up and shutdown tests.
public final class ServiceProcess: @unchecked Sendable {
    public let name: String
    public let port: Int
    private let process = Process()
    /// Output goes to a file, not a pipe: a full pipe would block a chatty child forever.
    private let outputURL = FileManager.default.temporaryDirectory
        .appendingPathComponent("latchkey-\(UUID().uuidString).log")

    /// The folder holding the executables `swift build` produced next to this test bundle.
    public static var binaryFolder: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Starts `name` with `environment` added to this process's environment and `HTTP_PORT` set.
    public init(_ name: String, arguments: [String] = [], environment: [String: String]) throws {
        self.name = name
        self.port = Int.random(in: 20_000...40_000)
        process.executableURL = Self.binaryFolder.appendingPathComponent(name)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        env["HTTP_PORT"] = String(port)
        env["LOG_LEVEL"] = env["LOG_LEVEL"] ?? "info"
        process.environment = env
        FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputURL)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try output.close()
    }

    /// Polls `GET /healthz` until it answers 200; false if the process exits or time runs out.
    public func waitUntilHealthy(timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        let url = URL(string: "http://127.0.0.1:\(port)/healthz")!
        while ContinuousClock.now < deadline, process.isRunning {
            if let (_, response) = try? await URLSession.shared.data(from: url),
               (response as? HTTPURLResponse)?.statusCode == 200 {
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Sends `signal` and waits for the exit; returns the exit status, or nil if it did not exit in time.
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(15)) async -> Int32? {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return await waitForExit(timeout: timeout)
    }

    /// Waits for the process to end on its own.
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    /// Everything the process wrote to stdout and stderr so far.
    public func capturedOutput() -> String {
        (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: outputURL)
    }
}
