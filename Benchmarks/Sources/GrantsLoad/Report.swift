import BenchmarkSupport
import Foundation

/// The Markdown report: grants per second and latency per phase next to the same-run baselines.
struct Report {
    let arguments: Arguments
    let results: [GrantsLoad.Phase]
    /// The service left idle after the load.
    let idle: Meter.Cost

    func write() throws {
        var lines = [
            "# token-service grants benchmark", "",
            arguments.machine, "",
            "Token service (release build, log level warning) and load generator on the same 2-CPU machine, with the",
            "shared PostgreSQL cluster. \(arguments.kafkaNote)",
            "Closed loop: `wrk` (\(arguments.wrkThreads) threads, \(arguments.workers) keep-alive connections, one request in flight on each),",
            "\(Int(arguments.seconds)) s per grant; like pgbench's client in the baseline, it is a C program that takes",
            "little of the two CPUs (its CPU per grant is in the cost table).",
            "DPoP proofs (ES256), PKCE pairs and authorization codes are prepared before each phase; codes come",
            "from the real `/authorize` with an SSO session cookie (one sign-in, no prompt). Every grant is the",
            "full production path: client authentication, DPoP proof check, the grant's transaction with its",
            "`TokenIssued` outbox row, ES256-signed JWT access token (+ ID token and rotated refresh token where",
            "the grant issues them). Each phase starts with fresh planner statistics (`ANALYZE`, as autovacuum",
            "keeps them on a running system); the refresh phase runs after the code phase, whose redemptions",
            "filled the refresh tokens' table.", "",
            "## Same-run baselines", "",
            "| baseline | per second |", "|---|---|",
            "| `pgbench` TPS (scratch database, `pgbench -i`, TPC-B-like, 8 clients, 10 s) | \(arguments.pgbenchTPS) |",
            "| `pgbench -S` TPS (select-only, same database, 8 clients, 10 s) | \(arguments.pgbenchSelectTPS) |",
            "| `openssl speed -seconds 3 ecdsap256` sign | \(arguments.opensslSign) |",
            "| `openssl speed -seconds 3 ecdsap256` verify | \(arguments.opensslVerify) |", "",
            "## Grants", "",
            "`pgbench` around the phase: the same TPC-B-like run (8 clients) for 5 s right before and 5 s right",
            "after the phase, their mean; the phase's ratio is to it, and its ratio to the run's first baseline",
            "follows.", "",
            "| grant | grants/s | pgbench TPS around the phase | % of it | % of the run's pgbench | p50 ms | p99 ms | failed |",
            "|---|---|---|---|---|---|---|---|",
        ]
        let pgbench = Double(arguments.pgbenchTPS) ?? 0
        for phase in results {
            let result = phase.result
            let around = phase.pgbenchTPS.map { String(format: "%.0f", $0) } ?? "–"
            lines.append(
                "| \(result.name) | \(Int(result.perSecond.rounded())) | \(around) | "
                    + "\(Self.ratio(result.perSecond, phase.pgbenchTPS ?? 0)) | \(Self.ratio(result.perSecond, pgbench)) | "
                    + "\(Self.ms(result.p50)) | \(Self.ms(result.p99)) | \(result.failed) |")
        }
        lines += [
            "", "## Cost per grant", "",
            "CPU from `/proc/<pid>/stat` (utime + stime) over each phase, divided by the grants it completed:",
            "the token service, and PostgreSQL (the postmaster and every backend of the cluster, the outbox",
            "relay's included). Statements are every top-level statement the benchmark database ran in the",
            "phase (`pg_stat_statements`), i.e. round trips, the relay's included. The load generator's CPU is",
            "`wrk`'s own (`getrusage` of the child process).", "",
            "| grant | service CPU µs | PostgreSQL CPU µs | statements | load generator CPU µs |",
            "|---|---|---|---|---|",
        ]
        for phase in results {
            let result = phase.result
            let per = phase.cost.per(result.completed)
            let statements = per.statements.map { String(format: "%.1f", $0) } ?? "–"
            let service = String(format: "%.0f", per.serviceMicroseconds)
            let postgres = String(format: "%.0f", per.postgresMicroseconds)
            let generator = String(format: "%.0f", result.generatorCPU * 1e6 / Double(max(result.completed, 1)))
            lines.append("| \(result.name) | \(service) | \(postgres) | \(statements) | \(generator) |")
        }
        let minutes = max(arguments.idleSeconds, 1) / 60
        let idleStatements = idle.statements.map { String(format: "%.0f", Double($0) / minutes) } ?? "–"
        let idleService = String(format: "%.1f", idle.serviceCPU * 1_000 / minutes)
        let idlePostgres = String(format: "%.1f", idle.postgresCPU * 1_000 / minutes)
        lines += [
            "", "## Idle cost", "",
            "The token service idle for \(Int(arguments.idleSeconds)) s after the load (relay drained; relay, signing-key",
            "lifecycle, janitor and client-use batch running with their default intervals):", "",
            "| per minute | statements | service CPU ms | PostgreSQL CPU ms |", "|---|---|---|---|",
            "| idle token service | \(idleStatements) | \(idleService) | \(idlePostgres) |",
        ]
        lines.append("")
        try lines.joined(separator: "\n").write(toFile: arguments.report, atomically: true, encoding: .utf8)
    }

    static func ratio(_ rate: Double, _ baseline: Double) -> String {
        baseline > 0 ? String(format: "%.0f %%", rate / baseline * 100) : "–"
    }

    static func ms(_ microseconds: Double) -> String {
        String(format: "%.1f", microseconds / 1_000)
    }
}
