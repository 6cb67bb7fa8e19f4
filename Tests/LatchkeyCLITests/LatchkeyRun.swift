import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport

/// One run of the built `latchkey` executable: its exit status and everything it printed.
struct LatchkeyRun: CustomStringConvertible {
    var status: Int32?
    var output: String

    var description: String { "latchkey exited \(status.map(String.init) ?? "(hung)"): \(output.suffix(3_000))" }

    /// The JSON document of the output (for `--output json`); an error message on standard error may come
    /// before or after it (the two streams share the output file).
    func json() throws -> JSONValue {
        let start =
            output.hasPrefix("{") ? output.startIndex : output.range(of: "\n{")?.lowerBound ?? output.startIndex
        let end = output.range(of: "\n}", options: .backwards)?.upperBound ?? output.endIndex
        do { return try StrictJSONParser.parse(Array(output[start..<max(start, end)].utf8)) } catch {
            throw NotJSON(description: "\(error) in: \(output.prefix(2_000))")
        }
    }

    struct NotJSON: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `latchkey arguments` with exactly `environment` (plus `PATH`) and waits for it to end.
    static func run(_ arguments: [String], environment: [String: String], timeout: Duration = .seconds(120))
        async throws -> LatchkeyRun
    {
        var env = environment
        env["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let child = try ChildProcess(
            executable: ServiceProcess.binaryFolder.appendingPathComponent("latchkey").path, arguments: arguments,
            environment: env)
        var status = await child.waitForExit(timeout: timeout)
        if status == nil {
            child.send(SIGKILL)
            status = nil
        }
        return LatchkeyRun(status: status, output: child.output())
    }
}
