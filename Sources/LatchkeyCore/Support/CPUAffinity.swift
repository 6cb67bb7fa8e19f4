import Foundation

/// The CPUs this process may run on (`taskset`, `sched_setaffinity`, a CPU manager's pinning). NIO sizes
/// its default thread pools from the cgroup only, so a process pinned to one CPU would otherwise run
/// one event loop per CPU of the machine, time-sliced on that one CPU.
public enum CPUAffinity {
    /// Number of CPUs in `Cpus_allowed_list` of `/proc/self/status`; nil where it cannot be read.
    public static func allowedCPUCount() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return nil }
        return count(list: line.dropFirst("Cpus_allowed_list:".count))
    }

    /// Counts a kernel CPU list such as `0-3,8,10-11`; nil when it is malformed or empty.
    static func count(list: Substring) -> Int? {
        var total = 0
        for range in list.trimmingCharacters(in: .whitespaces).split(separator: ",") {
            let bounds = range.split(separator: "-", omittingEmptySubsequences: false)
            guard let first = bounds.first.flatMap({ Int($0) }) else { return nil }
            switch bounds.count {
            case 1: total += 1
            case 2:
                guard let last = Int(bounds[1]), last >= first else { return nil }
                total += last - first + 1
            default: return nil
            }
        }
        return total > 0 ? total : nil
    }
}
