import Foundation
import LatchkeyCore
import NIOCore
import NIOPosix

/// Where a service's Swift tasks run.
public enum TaskExecution {
    /// Makes the NIO event loops Swift's global executor, so a request does not hop between the HTTP server's
    /// threads, Swift's cooperative pool and PostgreSQL's or an HTTP client's threads: several context switches and
    /// wake-ups per database statement otherwise. Safe because nothing a task runs blocks its thread: password
    /// hashing, DNS lookups and Kafka's blocking calls run on their own dispatch queues.
    ///
    /// One event loop per CPU the process may use: pinned to fewer CPUs than the machine has (as a sidecar often
    /// is), more loops would take turns on them and stall each other's requests for whole scheduler slices.
    /// `NIO_SINGLETON_GROUP_LOOP_COUNT` still decides when set. Call it first thing on the main thread.
    public static func runTasksOnEventLoops() {
        if ProcessInfo.processInfo.environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil,
            let allowed = CPUAffinity.allowedCPUCount(), allowed < System.coreCount
        {
            NIOSingletons.groupLoopCountSuggestion = allowed
        }
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
