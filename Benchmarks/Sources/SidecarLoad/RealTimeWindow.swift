import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the measured processes under `SCHED_FIFO` for the open-loop phases, and back under their usual
/// policy (and nice value) afterwards.
///
/// The machine is shared with processes outside the benchmark that wake about once a second and then hold a
/// CPU for several milliseconds; a niced `SCHED_OTHER` thread does not preempt them. A load generator held
/// off its CPU sends nothing for that long and then a burst, which the sidecar works off for several times
/// as long: the tail measured is then the generator's, not the sidecar's. A real-time policy keeps every
/// other process off while either is runnable. Not used for the closed-loop phases: a process that keeps
/// its CPU busy is throttled under a real-time policy (after 950 ms of each second), which would add stalls
/// of its own.
struct RealTimeWindow {
    let priority: Int32
    let pids: [Int32]

    /// Whether every thread of every process now runs under `SCHED_FIFO`.
    @discardableResult
    func enter() -> Bool {
        priority > 0 && pids.allSatisfy { Self.setPolicy(SCHED_FIFO, priority: priority, pid: $0) }
    }

    func leave() {
        guard priority > 0 else { return }
        for pid in pids { _ = Self.setPolicy(SCHED_OTHER, priority: 0, pid: pid) }
    }

    /// Applies the policy to each thread of `pid` (a policy is per thread on Linux; threads started while it
    /// holds inherit it from the thread that starts them).
    private static func setPolicy(_ policy: Int32, priority: Int32, pid: Int32) -> Bool {
        #if os(Linux)
            guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else {
                return false
            }
            var parameters = sched_param(sched_priority: priority)
            return threads.compactMap { Int32($0) }.reduce(true) { applied, thread in
                sched_setscheduler(thread, policy, &parameters) == 0 && applied
            }
        #else
            return false
        #endif
    }
}
