import Foundation
import Logging
import PostgresNIO

/// What a phase of load cost: CPU seconds of the service process and of the whole PostgreSQL cluster
/// (`/proc/<pid>/stat` utime + stime), and the top-level statements the benchmark database ran
/// (`pg_stat_statements`), each statement being one round trip of the extended protocol.
public struct Meter: Sendable {
    public struct Reading: Sendable {
        let serviceCPU: Double
        /// CPU seconds of each PostgreSQL process by pid, so a backend that exits is not taken away.
        let postgresCPU: [Int32: Double]
        let statements: Int?
    }

    public struct Cost: Sendable {
        public let serviceCPU: Double
        public let postgresCPU: Double
        public let statements: Int?

        /// Per operation: service µs, PostgreSQL µs, statements (nil when not measured).
        public func per(_ operations: Int) -> (
            serviceMicroseconds: Double, postgresMicroseconds: Double, statements: Double?
        ) {
            let count = Double(max(operations, 1))
            return (serviceCPU / count * 1e6, postgresCPU / count * 1e6, statements.map { Double($0) / count })
        }
    }

    let servicePID: Int32
    let postmasterPID: Int32
    let statsClient: PostgresClient?
    let databaseName: String
    let logger: Logger
    let statisticsClient: PostgresClient?

    /// `statsClient` connects to a database where the `pg_stat_statements` view exists; `databaseName` is
    /// the database whose statements are counted. `statisticsClient`, when given, connects to that database
    /// as the owner of its tables, for ``refreshStatistics()``.
    public init(
        servicePID: Int32, postmasterPID: Int32, statsClient: PostgresClient?, databaseName: String, logger: Logger,
        statisticsClient: PostgresClient? = nil
    ) {
        self.servicePID = servicePID
        self.postmasterPID = postmasterPID
        self.statsClient = statsClient
        self.databaseName = databaseName
        self.logger = logger
        self.statisticsClient = statisticsClient
    }

    /// `ANALYZE` of the measured database, as autovacuum keeps a running system's statistics current. A
    /// database created seconds before has none: its sessions would plan (and cache plans) for empty tables
    /// and keep those plans while the tables grow during a phase.
    public func refreshStatistics() async {
        guard let statisticsClient else { return }
        do {
            try await statisticsClient.query("ANALYZE", logger: logger)
        } catch {
            logger.warning("ANALYZE failed: \(String(reflecting: error))")
        }
    }

    public func read() async -> Reading {
        Reading(
            serviceCPU: servicePID > 0 ? Self.cpuSeconds(servicePID) : 0,
            postgresCPU: postmasterPID > 0 ? Self.clusterCPUSeconds(postmaster: postmasterPID) : [:],
            statements: await statements())
    }

    public func cost(from start: Reading, to end: Reading) -> Cost {
        // Processes present at both readings count their difference, new ones all of theirs; one that exited
        // in between loses what it used since the first reading (backends of long-lived pools rarely exit).
        let postgres = end.postgresCPU.reduce(0.0) { total, process in
            total + process.value - (start.postgresCPU[process.key] ?? 0)
        }
        return Cost(
            serviceCPU: end.serviceCPU - start.serviceCPU, postgresCPU: postgres,
            statements: start.statements.flatMap { begin in end.statements.map { $0 - begin } })
    }

    private func statements() async -> Int? {
        guard let statsClient else { return nil }
        do {
            let rows = try await statsClient.query(
                """
                SELECT coalesce(sum(s.calls), 0)::bigint FROM pg_stat_statements s
                JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = \(databaseName) AND s.toplevel
                """, logger: logger)
            for try await count in rows.decode(Int.self) { return count }
        } catch {
            logger.warning("pg_stat_statements unreadable: \(String(reflecting: error))")
        }
        return nil
    }

    /// utime + stime of one process, seconds (0 when it is gone).
    public static func cpuSeconds(_ pid: Int32) -> Double {
        guard let fields = statFields(pid) else { return 0 }
        return ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticksPerSecond
    }

    /// The postmaster and all its children (backends, WAL writer, checkpointer, …), CPU seconds by pid.
    public static func clusterCPUSeconds(postmaster: Int32) -> [Int32: Double] {
        var processes = [postmaster: cpuSeconds(postmaster)]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), pid != postmaster, let fields = statFields(pid),
                Int32(fields[1]) == postmaster
            else { continue }
            processes[pid] = ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticksPerSecond
        }
        return processes
    }

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Fields of /proc/<pid>/stat after the command name (which may hold spaces): index 0 is the state,
    /// 1 the parent pid, 11 utime, 12 stime.
    static func statFields(_ pid: Int32) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 12 ? fields : nil
    }
}
