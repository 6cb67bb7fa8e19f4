import BenchmarkSupport
import Foundation
import LatchkeyCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// `SidecarLoad crypto-speed` — in-process baselines on this core.
/// `SidecarLoad verify-breakdown [--seconds S --rounds N]` — raw P-256 verify vs the whole proof verification
/// and its steps, in process, same run.
/// `SidecarLoad load --sidecar-port P --upstream-port U --sidecar-pid PID …` — the dpop-verifier benchmark:
/// runs the upstream + issuer, pre-generates one fresh proof per request, drives the sidecar and
/// the upstream directly, and writes a Markdown report.
@main
struct SidecarLoad {
    static func main() async {
        // Pinned to one CPU, NIO would still start one event loop per CPU of the machine; two loops
        // taking turns on one CPU delay each other's connections by whole scheduler slices, which
        // would show up as latency of whatever is being measured.
        if ProcessInfo.processInfo.environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil,
            let allowed = CPUAffinity.allowedCPUCount(), allowed < System.coreCount
        {
            NIOSingletons.groupLoopCountSuggestion = allowed
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch arguments.first {
            case "crypto-speed":
                let options = try Arguments(Array(arguments.dropFirst()))
                let seconds = try options.double("seconds", 3)
                print(
                    String(format: "p256_verify_per_second %.0f", CryptoSpeed.p256VerifiesPerSecond(seconds: seconds)))
                print(
                    String(
                        format: "dpop_proof_checks_per_second %.0f",
                        try await CryptoSpeed.proofChecksPerSecond(seconds: seconds)))
            case "verify-breakdown":
                let options = try Arguments(Array(arguments.dropFirst()))
                try VerificationBreakdown(
                    seconds: try options.double("seconds", 1), rounds: try options.int("rounds", 3),
                    proofCount: try options.int("proofs", 60_000),
                    replayEntries: try options.int("replay-cache", 100_000)
                ).run()
            case "load":
                try await LoadBenchmark(options: try Arguments(Array(arguments.dropFirst()))).run()
            default:
                print(
                    "usage: SidecarLoad crypto-speed [--seconds S] | verify-breakdown [--seconds S] [--rounds N] | load --sidecar-port P --upstream-port U --sidecar-pid PID [...]"
                )
            }
        } catch {
            FileHandle.standardError.write(Data("SidecarLoad: \(error)\n".utf8))
            exit(1)
        }
    }
}

struct LoadBenchmark {
    let options: Arguments

    func run() async throws {
        let sidecarPort = try options.int("sidecar-port", 18083)
        let upstreamPort = try options.int("upstream-port", 18090)
        let sidecarPID = try options.int("sidecar-pid", 0)
        let connections = try options.int("connections", 32)
        let seconds = try options.double("seconds", 10)
        let proofCount = try options.int("proofs", 300_000)
        let replayCapacity = try options.int("replay-cache", 100_000)
        let origin = options.string("origin", "https://api.example.com")
        let path = "/api/items"

        let upstream = BenchUpstream(issuerKey: try SigningKey.generate(.es256), port: upstreamPort)
        let server = try await upstream.start()
        defer { server.close(promise: nil) }
        try await SimpleHTTP.waitFor(port: upstreamPort, path: "/t/bench/jwks", seconds: 10)
        try await SimpleHTTP.waitFor(port: sidecarPort + 1000, path: "/readyz", seconds: 30)

        let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
        let token = try upstream.token(jkt: signer.jkt, audience: origin)
        let generationStart = ContinuousClock.now
        let pool = try await RequestPool(
            count: proofCount, path: path, origin: origin, host: "api.example.com", token: token, signer: signer)
        log("generated \(proofCount) proofs in \(format((ContinuousClock.now - generationStart).seconds)) s")
        let fixed = pool.heads[0]  // the upstream ignores proofs: direct phases reuse one request of the same size

        log("warm-up")
        _ = try await LoadGenerator.run(
            port: sidecarPort, connections: connections, seconds: 2, mode: .closed, next: pool.next)
        log("peak through the sidecar")
        let cpuBefore = Meter.cpuSeconds(Int32(sidecarPID))
        let stealBeforePeak = Self.stealMilliseconds()
        let peak = try await LoadGenerator.run(
            port: sidecarPort, connections: connections, seconds: seconds, mode: .closed, next: pool.next)
        let peakCPU = Meter.cpuSeconds(Int32(sidecarPID)) - cpuBefore
        let peakSteal = zip(Self.stealMilliseconds(), stealBeforePeak).map { $0 - $1 }
        // The same request bytes to a public path (DPOP_PUBLIC_PATHS=/public/*): the sidecar forwards it
        // without verifying anything, which measures what the proxying alone costs.
        let publicRequest = RequestPool.head(
            path: "/public/items", host: "api.example.com", token: token,
            proof: fixed.headers["DPoP"].first ?? "")
        log("peak through the sidecar, public path (proxying only)")
        let proxyOnly = try await LoadGenerator.run(
            port: sidecarPort, connections: connections, seconds: seconds, mode: .closed
        ) {
            publicRequest
        }
        if options.string("phases", "all") == "peak" {
            // Quick look while tuning (`BENCH_PHASES=peak`): no report is written.
            print(
                "peak through the sidecar: \(format(peak.rate, 0)) req/s, p50 \(format(peak.percentile(0.5), 0)) µs, "
                    + "p99 \(format(peak.percentile(0.99), 0)) µs, non-200 \(peak.failures); proxying only: \(format(proxyOnly.rate, 0)) req/s; "
                    + "sidecar CPU per request \(format(peakCPU * 1e6 / max(peak.rate * seconds, 1), 1)) µs "
                    + "(\(format(100 * peakCPU / seconds, 0)) % of a CPU), steal \(peakSteal.map { format($0, 0) }.joined(separator: "/")) ms"
            )
            return
        }
        log("peak of the upstream alone")
        let directPeak = try await LoadGenerator.run(
            port: upstreamPort, connections: connections, seconds: seconds, mode: .closed
        ) { fixed }
        let half = peak.rate / 2
        let realTime = RealTimeWindow(
            priority: Int32(try options.int("realtime-priority", 0)),
            pids: [getpid()] + (sidecarPID > 0 ? [Int32(sidecarPID)] : []))
        let underRealTime = realTime.enter()
        log("half of peak (\(Int(half)) req/s) through the sidecar\(underRealTime ? ", SCHED_FIFO" : "")")
        let stealBefore = Self.stealMilliseconds()
        let halfCPUBefore = Meter.cpuSeconds(Int32(sidecarPID))
        let halfSidecar = try await LoadGenerator.run(
            port: sidecarPort, connections: connections, seconds: seconds,
            mode: .open(perSecond: half), next: pool.next)
        let halfCPU = Meter.cpuSeconds(Int32(sidecarPID)) - halfCPUBefore
        let stealDuringHalf = zip(Self.stealMilliseconds(), stealBefore).map { $0 - $1 }
        log("same rate to the upstream alone")
        let halfDirect = try await LoadGenerator.run(
            port: upstreamPort, connections: connections, seconds: seconds,
            mode: .open(perSecond: half)
        ) { fixed }
        realTime.leave()
        let timeline = options.string("timeline", "")
        if !timeline.isEmpty { try LoadGenerator.writeTimeline(halfSidecar, to: timeline) }

        // Fill the replay cache past its bound (its entries outlive the run: iat window), then measure memory.
        var metrics = try await SimpleHTTP.get(port: sidecarPort + 1000, path: "/metrics").body
        try await Task.sleep(for: .seconds(6))  // one gauge interval
        metrics = try await SimpleHTTP.get(port: sidecarPort + 1000, path: "/metrics").body
        if (SimpleHTTP.metric(metrics, "latchkey_dpop_replay_cache_entries") ?? 0) < Double(replayCapacity),
            pool.remaining > 0
        {
            log("filling the replay cache")
            _ = try await LoadGenerator.run(
                port: sidecarPort, connections: connections, seconds: Double(replayCapacity) / max(peak.rate, 1),
                mode: .closed, next: pool.next)
            try await Task.sleep(for: .seconds(6))
            metrics = try await SimpleHTTP.get(port: sidecarPort + 1000, path: "/metrics").body
        }
        let memory = sidecarPID > 0 ? Self.memory(pid: sidecarPID) : (rss: 0, peak: 0)

        let report = Report(
            opensslVerify: try options.double("openssl-verify", 0), swiftVerify: try options.double("swift-verify", 0),
            libraryChecks: try options.double("library-checks", 0), connections: connections, seconds: seconds,
            proofsUsed: pool.used, peak: peak, proxyOnly: proxyOnly, directPeak: directPeak, halfSidecar: halfSidecar,
            halfDirect: halfDirect,
            replayEntries: SimpleHTTP.metric(metrics, "latchkey_dpop_replay_cache_entries") ?? -1,
            replayEvictions: SimpleHTTP.metric(metrics, "latchkey_dpop_replay_cache_evictions_total") ?? -1,
            rssKiB: memory.rss, peakRssKiB: memory.peak, stealDuringHalf: stealDuringHalf,
            sidecarCPUDuringHalf: halfCPU, peakCPU: peakCPU, openLoopRealTime: underRealTime,
            machine: options.string("machine", ""))
        let markdown = report.markdown()
        print(markdown)
        let output = options.string("report", "")
        if !output.isEmpty { try markdown.write(toFile: output, atomically: true, encoding: .utf8) }
    }

    /// Time the hypervisor ran something else instead of each of this VM's CPUs (`steal` in
    /// /proc/stat), milliseconds since boot: a vCPU that is not running stalls whatever was on it.
    static func stealMilliseconds() -> [Double] {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return [] }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return stat.split(separator: "\n").filter { $0.hasPrefix("cpu") && !$0.hasPrefix("cpu ") }.map { line in
            let fields = line.split(separator: " ")
            return fields.count > 8 ? (Double(fields[8]) ?? 0) * 1_000 / ticksPerSecond : 0
        }
    }

    /// VmRSS and VmHWM of a process, KiB.
    static func memory(pid: Int) -> (rss: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }
}

func log(_ message: String) {
    FileHandle.standardError.write(Data("[bench] \(message)\n".utf8))
}

func format(_ value: Double, _ digits: Int = 1) -> String {
    String(format: "%.\(digits)f", value)
}
