import Foundation
import Logging

/// Environment knobs and small helpers of a benchmark run.
public enum Bench {
    public static let environment = ProcessInfo.processInfo.environment

    public static func makeLogger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .error
        return logger
    }

    public static func setting(_ name: String, _ fallback: Int) -> Int {
        environment[name].flatMap(Int.init) ?? fallback
    }

    public static func required(_ name: String) throws -> String {
        guard let value = environment[name], !value.isEmpty else { throw BenchError("\(name) is required") }
        return value
    }

    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Starts a service binary with this process's environment plus `extra`, its output going to `log`.
    public static func startProcess(binary: String, environment extra: [String: String], log: String) throws -> Process
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.environment = environment.merging(extra) { $1 }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    /// Prints `run`'s measurements as one JSON object, or the failure on stderr with exit status 1.
    public static func report(_ name: String, _ run: () async throws -> [String: Any]) async {
        do {
            let result = try await run()
            let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys, .prettyPrinted])
            print(String(decoding: data, as: UTF8.self))
        } catch {
            FileHandle.standardError.write(Data("\(name) benchmark failed: \(String(reflecting: error))\n".utf8))
            exit(1)
        }
    }
}

/// A benchmark precondition that did not hold.
public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
