import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Bounds how long a stopping process may take. A service group waits for every service to finish,
/// and a service blocked where cancellation cannot reach it (a librdkafka call waiting on a dead broker,
/// a request waiting on a database that stopped answering) would keep a process alive that neither serves
/// nor restarts. It is the last service of the group around the application, which a signal reaches
/// first, and the last of the application's own services, which a failing service cancels at once (a
/// port already taken). From the first of these the rest of the shutdown has `grace` to finish; after
/// that the process exits with status 1.
public struct ShutdownDeadline: Service {
    let grace: Duration
    let logger: Logger

    public init(grace: Duration, logger: Logger) {
        self.grace = grace
        self.logger = logger
    }

    public func run() async {
        // Returns on graceful shutdown, or throws when the group cancels its services after a failure.
        try? await gracefulShutdown()
        Self.arm(grace: grace, logger: logger)
    }

    private static let armed = Mutex(false)

    /// Starts the deadline on a thread of its own (the cooperative pool may be the very thing that is
    /// stuck), once per process.
    static func arm(grace: Duration, logger: Logger) {
        guard
            armed.withLock({ wasArmed in
                defer { wasArmed = true }
                return !wasArmed
            })
        else { return }
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        let thread = Thread {
            Thread.sleep(forTimeInterval: seconds)
            logger.critical(
                "shutdown did not finish within the grace period; exiting", metadata: ["grace_seconds": "\(seconds)"])
            terminateProcess(status: 1)
        }
        thread.name = "shutdown-deadline"
        thread.start()
    }
}

/// Ends the process with `status` at once. `exit` would first run the C library's exit handlers and static
/// destructors, and one of those waiting on a thread a library started could keep a process alive that
/// already stopped serving; output is flushed first so the last log lines survive.
public func terminateProcess(status: Int32) -> Never {
    fflush(nil)  // every output stream
    _exit(status)
}
