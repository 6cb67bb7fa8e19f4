import BenchmarkSupport
import Foundation

/// Command-line options of GrantsLoad (`--name value` pairs).
struct Arguments: Sendable {
    var port = 0
    var workers = 8
    var seconds = 10.0
    var codes = 25_000
    var proofsPerWorker = 5_000
    /// `Benchmarks/wrk-phase.lua`, the wrk script that sends the prepared requests.
    var wrkScript = "Benchmarks/wrk-phase.lua"
    var wrkThreads = 2
    var pgbenchTPS = ""
    /// pgbench's built-in select-only script (`-S`): what a grant with one read-only statement could reach.
    var pgbenchSelectTPS = ""
    /// pgbench and its initialised database, run for 5 s before and after each phase (the phase's own baseline).
    var pgbench = ""
    var pgbenchURL = ""
    var opensslSign = ""
    var opensslVerify = ""
    var machine = ""
    var report = "Benchmarks/results/grants.md"
    /// The token service's and the PostgreSQL postmaster's process ids, for CPU per grant (0: not measured).
    var servicePID: Int32 = 0
    var postmasterPID: Int32 = 0
    /// How long the idle service is measured after the load (its relay drained, every periodic job running).
    var idleSeconds = 60.0
    var kafkaNote = "An embedded Kafka cluster receives `TokenIssued` from the outbox relay while the load runs."

    /// The baseline run next to each phase, when pgbench is given.
    var phaseBaseline: PgbenchBaseline? {
        pgbench.isEmpty ? nil : PgbenchBaseline(executable: pgbench, url: pgbenchURL)
    }

    init<S: Sequence>(_ raw: S) throws where S.Element == String {
        var iterator = raw.makeIterator()
        while let name = iterator.next() {
            guard let value = iterator.next() else { throw BenchmarkError("\(name) needs a value") }
            switch name {
            case "--port": port = Int(value) ?? 0
            case "--workers": workers = Int(value) ?? workers
            case "--seconds": seconds = Double(value) ?? seconds
            case "--codes": codes = Int(value) ?? codes
            case "--proofs-per-worker": proofsPerWorker = Int(value) ?? proofsPerWorker
            case "--wrk-script": wrkScript = value
            case "--wrk-threads": wrkThreads = Int(value) ?? wrkThreads
            case "--pgbench-tps": pgbenchTPS = value
            case "--pgbench-select-tps": pgbenchSelectTPS = value
            case "--pgbench": pgbench = value
            case "--pgbench-url": pgbenchURL = value
            case "--openssl-sign": opensslSign = value
            case "--openssl-verify": opensslVerify = value
            case "--machine": machine = value
            case "--report": report = value
            case "--kafka-note": kafkaNote = value
            case "--service-pid": servicePID = Int32(value) ?? 0
            case "--postmaster-pid": postmasterPID = Int32(value) ?? 0
            case "--idle-seconds": idleSeconds = Double(value) ?? idleSeconds
            default: throw BenchmarkError("unknown option \(name)")
            }
        }
        guard port > 0 else { throw BenchmarkError("--port is required") }
        guard pgbench.isEmpty == pgbenchURL.isEmpty else {
            throw BenchmarkError("--pgbench and --pgbench-url go together")
        }
    }
}
