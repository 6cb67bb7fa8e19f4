import Foundation

/// A closed-loop phase driven by `wrk` (C, one event loop per thread), so that the load generator takes
/// as little of the machine's two CPUs as pgbench's client does in the baseline. `Benchmarks/wrk-phase.lua`
/// sends the prepared requests and prints the phase's figures as one JSON line.
public struct WrkPhase: Sendable {
    /// One request as the script reads it: method and path, headers, body.
    public struct Request: Sendable {
        public var method = "POST"
        public var path: String
        public var headers: [(String, String)]
        public var body: String

        public init(method: String = "POST", path: String, headers: [(String, String)], body: String) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }

        /// "METHOD PATH<TAB>Name: value<TAB>…<TAB><TAB>BODY"; no field may hold a tab or a line break.
        var line: String {
            ([method + " " + path] + headers.map { "\($0): \($1)" }).joined(separator: "\t") + "\t\t" + body
        }
    }

    /// What the phase sends: one request over and over, each thread's requests in turn over and over, each
    /// thread's single-use requests once each, or refresh-token chains (each thread's first tokens, then the
    /// token each answer returns, with its own proof each time).
    public enum Input {
        case repeating(Request)
        case cycling([[Request]])
        case once([[Request]])
        case chains(template: Request, tokens: [[String]], proofs: [[String]])
    }

    public struct Result: Sendable {
        public let name: String
        public let completed: Int
        public let failed: Int
        /// Seconds from the first request sent to the end of the phase.
        public let elapsed: Double
        /// Latency percentiles in microseconds.
        public let p50: Double
        public let p99: Double
        /// CPU seconds (user + system) of the `wrk` process.
        public let generatorCPU: Double
        /// Wall-clock start and end of the phase.
        public let window: (start: Date, end: Date)

        public var perSecond: Double { Double(completed) / elapsed }
    }

    public let script: String
    public let url: String
    public let threads: Int
    public let connections: Int
    public let seconds: Double
    public let directory: URL

    public init(script: String, url: String, threads: Int, connections: Int, seconds: Double, directory: URL) {
        self.script = script
        self.url = url
        self.threads = threads
        self.connections = connections
        self.seconds = seconds
        self.directory = directory
    }

    /// Runs `input` under `name`; fails when a thread ran out of single-use input before the phase ended.
    public func run(name: String, _ input: Input) throws -> Result {
        let data = directory.appendingPathComponent("wrk-\(UUID().uuidString)").path
        let mode: String
        switch input {
        case .repeating(let request):
            mode = "static"
            try write([request.line], to: "\(data).0")
        case .cycling(let perThread), .once(let perThread):
            if case .cycling = input { mode = "cycle" } else { mode = "list" }
            precondition(perThread.count == threads, "one list of requests per wrk thread")
            for (thread, requests) in perThread.enumerated() {
                try write(requests.map(\.line), to: "\(data).\(thread)")
            }
        case .chains(let template, let tokens, let proofs):
            mode = "chain"
            precondition(tokens.count == threads && proofs.count == threads, "one chain set per wrk thread")
            for thread in 0..<threads {
                try write(
                    [template.line] + tokens[thread].map { "T \($0)" } + proofs[thread].map { "P \($0)" },
                    to: "\(data).\(thread)")
            }
        }
        defer {
            for thread in 0..<threads { try? FileManager.default.removeItem(atPath: "\(data).\(thread)") }
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "wrk", "-t", "\(threads)", "-c", "\(connections)", "-d", "\(Int(seconds))s", "--timeout", "30s",
            "-s", script, url, "--", mode, data,
        ]
        let output = Pipe()
        process.standardOutput = output
        let before = Self.childrenCPU()
        let start = Date()
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let end = Date()
        let generatorCPU = Self.childrenCPU() - before
        guard process.terminationStatus == 0,
            let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let figures = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Int],
            let requests = figures["requests"], let duration = figures["duration_us"]
        else {
            throw BenchError(
                "wrk failed in phase \(name) (status \(process.terminationStatus)): \(text.suffix(500))")
        }
        if let exhausted = figures["exhausted_threads"], exhausted > 0 {
            throw BenchError(
                "\(name): \(exhausted) wrk thread(s) used up their prepared requests before \(Int(seconds)) s; "
                    + "prepare more (BENCH_CODES) or shorten the phase (BENCH_SECONDS)")
        }
        // wrk counts every answered request, refusals included; socket errors are requests without an answer.
        let refused = figures["status_errors"] ?? 0
        return Result(
            name: name, completed: requests - refused, failed: refused + (figures["socket_errors"] ?? 0),
            elapsed: Double(duration) / 1e6,
            p50: Double(figures["p50_us"] ?? 0), p99: Double(figures["p99_us"] ?? 0), generatorCPU: generatorCPU,
            window: (start, end))
    }

    private func write(_ lines: [String], to path: String) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// CPU seconds of this process's waited-for children so far.
    private static func childrenCPU() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_CHILDREN.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
