import Foundation

/// pgbench's TPC-B-like script run next to a measured phase, so that the phase's ratio compares it with what
/// the same PostgreSQL cluster did on the machine at that moment. The reference machine is shared, and its
/// share of the CPUs moves within minutes: one baseline at the start of a run can be a quarter off by the time
/// a later phase runs.
public struct PgbenchBaseline: Sendable {
    /// The `pgbench` executable and the URL of a database initialised by `pgbench -i`.
    public let executable: String
    public let url: String
    public let clients: Int
    public let seconds: Int

    public init(executable: String, url: String, clients: Int = 8, seconds: Int = 5) {
        self.executable = executable
        self.url = url
        self.clients = clients
        self.seconds = seconds
    }

    /// Transactions per second of one pgbench run.
    public func measure() throws -> Double {
        let process = Process()
        // pgbench ends a timed run on SIGALRM, and a child inherits the blocked signals of the thread that
        // starts it (the event loops and the task pool block them all): env restores its default handling.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "--default-signal=ALRM", executable, "-n", "-c", "\(clients)", "-j", "2", "-T", "\(seconds)", url,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // "tps = 2097.123456 (without initial connection time)"
        guard process.terminationStatus == 0,
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let value = line.dropFirst("tps = ".count).split(separator: " ").first, let tps = Double(value)
        else { throw BenchError("pgbench failed (status \(process.terminationStatus)): \(text.suffix(300))") }
        return tps
    }
}
